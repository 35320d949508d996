package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/api"
)

// sundial app credential: the executor credential of an app (admin only).

func newAppCredentialCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "credential", Short: "Manage an app's executor credential (admin)",
		Long: `An app's executor credential is the secret its executors present (sundial executor --token):
it lets them register into, beat for and report about that app only. The secret is shown once,
when it is created or rotated; rotating makes the old one stop working at once.`}
	secret := func(verb string, call func(*api.Client, context.Context, string) (*api.AppCredential, error)) *cobra.Command {
		c := &cobra.Command{Use: verb + " APP", Short: verb + " the app's executor credential", Args: cobra.ExactArgs(1)}
		c.RunE = o.run(func(ctx context.Context, cl *api.Client, cmd *cobra.Command, args []string) error {
			cred, err := call(cl, ctx, args[0])
			if err != nil {
				return err
			}
			return printOne(cmd.OutOrStdout(), o, cred, func(w io.Writer, c api.AppCredential) error {
				_, err := fmt.Fprintf(w, "Executor credential of app %q (%sd). Its secret, shown only this once:\n\n    %s\n\n", c.App, verb, c.Secret)
				return err
			})
		})
		return c
	}
	list := &cobra.Command{Use: "list APP", Short: "Show the app's executor credential (without its secret)", Args: cobra.ExactArgs(1)}
	list.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		creds, err := c.ListAppCredentials(ctx, args[0])
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, api.Page[api.AppCredential]{Items: creds}, "APP\tCREATED\tROTATED",
			func(c api.AppCredential) []string { return []string{c.App, when(c.CreatedAt), when(c.RotatedAt)} })
	})
	revoke := &cobra.Command{Use: "revoke APP", Short: "Revoke the app's executor credential: its executors are refused at once",
		Args: cobra.ExactArgs(1)}
	revoke.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if err := c.RevokeAppCredential(ctx, args[0]); err != nil {
			return err
		}
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "Executor credential of app %q revoked.\n", args[0])
		return err
	})
	cmd.AddCommand(secret("create", (*api.Client).CreateAppCredential), secret("rotate", (*api.Client).RotateAppCredential), list, revoke)
	return cmd
}
