package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sundial-scheduler/sundial/api"
)

func newAppCmd() *cobra.Command {
	o := &apiOptions{}
	return group("app", "Manage apps (executor groups)", o,
		newAppCreateCmd(o), newAppListCmd(o), newAppGetCmd(o), newAppUpdateCmd(o), newAppDeleteCmd(o),
		newAppCredentialCmd(o))
}

// appFlags are an app's settings, shared by create and update.
type appFlags struct {
	title, mode string
	addresses   []string
	// The protocol of the app's executors, and an xxl-job app's generation and token.
	protocol, xxlVersion, xxlTokenFile string
}

func (a *appFlags) add(f *pflag.FlagSet) {
	f.StringVar(&a.title, "title", "", "what the app is, for people")
	f.StringVar(&a.mode, "mode", "", "auto (the executors that register, the default) or manual (--address only)")
	f.StringSliceVar(&a.addresses, "address", nil, "an executor's base URL for manual mode (repeat, or comma-separate)")
	f.StringVar(&a.protocol, "protocol", "", "what the executors speak: sundial (the default) or xxl-job (XXL-JOB executors, unchanged)")
	f.StringVar(&a.xxlVersion, "xxl-version", "", "the XXL-JOB executors' generation: 2.x, 3.3 or 3.5 (or their release, e.g. 2.4.2)")
	f.StringVar(&a.xxlTokenFile, "xxl-token-file", "", "file holding the XXL-JOB executors' access token, xxl.job.accessToken (first line; default $SUNDIAL_XXL_TOKEN): at least 16 characters, and no other app's")
}

// apply copies the flags that were given onto req.
func (a *appFlags) apply(f *pflag.FlagSet, req *api.AppRequest) {
	if f.Changed("title") {
		req.Title = a.title
	}
	if f.Changed("mode") {
		req.AddressMode = a.mode
	}
	if f.Changed("address") {
		req.Addresses = a.addresses
	}
	if f.Changed("protocol") {
		req.Protocol = a.protocol
		if a.protocol != "xxl-job" {
			req.ProtocolVersion = ""
		}
	}
	if f.Changed("xxl-version") {
		req.ProtocolVersion = a.xxlVersion
	}
}

// xxlToken reads the access token from --xxl-token-file or $SUNDIAL_XXL_TOKEN (never a flag
// value: flags show in ps).
func (a *appFlags) xxlToken(req *api.AppRequest) error {
	tok := os.Getenv("SUNDIAL_XXL_TOKEN")
	if a.xxlTokenFile != "" {
		b, err := os.ReadFile(a.xxlTokenFile)
		if err != nil {
			return usageErrorf("--xxl-token-file: %v", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		tok = strings.TrimSpace(line)
	}
	if req.Protocol == "xxl-job" {
		req.XXLAccessToken = tok
	}
	return nil
}

func newAppCreateCmd(o *apiOptions) *cobra.Command {
	var af appFlags
	cmd := &cobra.Command{
		Use:   "create NAME [flags]",
		Short: "Create an app",
		Long: `Create an app: the group of executors that run its remote jobs (sundial job create --app).
In auto mode its instances are the executors that register with its name; in manual mode they
are the --address list. Executors may register before the app exists (it is then in auto mode).`,
		Example: `  sundial app create billing --title "Billing batch"
  sundial app create legacy --mode manual --address http://10.0.0.5:9999,http://10.0.0.6:9999`,
		Args: cobra.ExactArgs(1),
	}
	af.add(cmd.Flags())
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		// The API's PUT creates or replaces; create must not replace silently.
		_, err := c.GetApp(ctx, args[0])
		switch {
		case err == nil:
			return fmt.Errorf("app %q exists already: change it with 'sundial app update'", args[0])
		case !api.IsNotFound(err):
			return err
		}
		req := api.AppRequest{}
		af.apply(cmd.Flags(), &req)
		if err := af.xxlToken(&req); err != nil {
			return err
		}
		app, err := c.PutApp(ctx, args[0], req)
		if err != nil {
			return err
		}
		printWarnings(cmd, app.Warnings)
		return printOne(cmd.OutOrStdout(), o, app, showApp(nil))
	})
	return cmd
}

func showApp(live []api.Executor) func(io.Writer, api.App) error {
	return func(w io.Writer, a api.App) error {
		protocol := a.Protocol
		if a.ProtocolVersion != "" {
			protocol += " " + a.ProtocolVersion
			if a.XXLAccessTokenSet {
				protocol += " (access token set)"
			}
		}
		kv := []string{"Name", a.Name, "Title", a.Title, "Protocol", protocol, "Mode", a.AddressMode,
			"Addresses", strings.Join(a.Addresses, ", "), "Created", when(a.CreatedAt), "Updated", when(a.UpdatedAt)}
		if live != nil {
			var lines []string
			for _, in := range live {
				handlers := strings.Join(in.Handlers, ",")
				if handlers == "" {
					handlers = "no handlers"
				}
				lines = append(lines, fmt.Sprintf("%s (%s; seen %s)", in.Address, handlers, when(in.LastSeen)))
			}
			kv = append(kv, "Online", fmt.Sprintf("%d %s", len(live), strings.Join(lines, "; ")))
		}
		return fields(w, kv...)
	}
}

func newAppListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	cmd := &cobra.Command{Use: "list", Short: "List apps", Args: cobra.NoArgs}
	p.addFlags(cmd)
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.App], error) {
			return c.ListApps(ctx, lo)
		})
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "NAME TITLE PROTOCOL MODE ADDRESSES UPDATED", func(a api.App) []string {
			return []string{a.Name, a.Title, strings.TrimSpace(a.Protocol + " " + a.ProtocolVersion), a.AddressMode, strings.Join(a.Addresses, ","), when(a.UpdatedAt)}
		})
	})
	return cmd
}

func newAppGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get NAME", Short: "Show an app and its executors online", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		app, err := c.GetApp(ctx, args[0])
		if err != nil {
			return err
		}
		if o.machine() {
			return o.encode(cmd.OutOrStdout(), app)
		}
		all := pageOptions{all: true, limit: 1000}
		live, err := list(ctx, &all, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.Executor], error) {
			return c.ListExecutors(ctx, args[0], lo)
		})
		if err != nil {
			return err
		}
		if live.Items == nil {
			live.Items = []api.Executor{}
		}
		return printOne(cmd.OutOrStdout(), o, app, showApp(live.Items))
	})
	return cmd
}

func newAppUpdateCmd(o *apiOptions) *cobra.Command {
	var af appFlags
	cmd := &cobra.Command{
		Use:     "update NAME [flags]",
		Short:   "Change an app's settings (only the flags given)",
		Example: `  sundial app update legacy --mode auto --address ""`,
		Args:    cobra.ExactArgs(1),
	}
	af.add(cmd.Flags())
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		// PUT replaces every setting, so start from the app as it is now.
		a, err := c.GetApp(ctx, args[0])
		if err != nil {
			return err
		}
		req := api.AppRequest{Title: a.Title, AddressMode: a.AddressMode, Addresses: a.Addresses,
			Protocol: a.Protocol, ProtocolVersion: a.ProtocolVersion}
		af.apply(cmd.Flags(), &req)
		if err := af.xxlToken(&req); err != nil {
			return err
		}
		// --address "" clears the list (a StringSlice reads it as one empty element).
		if len(req.Addresses) == 1 && req.Addresses[0] == "" {
			req.Addresses = nil
		}
		app, err := c.PutApp(ctx, args[0], req)
		if err != nil {
			return err
		}
		printWarnings(cmd, app.Warnings)
		return printOne(cmd.OutOrStdout(), o, app, showApp(nil))
	})
	return cmd
}

func newAppDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME", Short: "Delete an app", Args: cobra.ExactArgs(1),
		Long: `Delete an app: its settings, its executor credential (its executors can no longer
register) and its registered instances. Its jobs stay, naming the app, and fail to dispatch
until the app is made again.`}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if err := c.DeleteApp(ctx, args[0]); err != nil {
			return err
		}
		if !o.machine() {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted app %s\n", args[0])
		}
		return nil
	})
	return cmd
}

// newExecActionCmd makes kill and retry, which POST to /executions/{id}/<action> and answer
// with an execution: the killed one, or the new attempt.
func newExecActionCmd(o *apiOptions, action, short, long string) *cobra.Command {
	cmd := &cobra.Command{Use: action + " ID", Short: short, Long: long, Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("execution", args[0])
		if err != nil {
			return err
		}
		act := c.KillExecution
		if action == "retry" {
			act = c.RetryExecution
		}
		x, err := act(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, x, func(w io.Writer, x api.Execution) error {
			if action == "retry" {
				_, err := fmt.Fprintf(w, "Retrying execution %d as execution %d (attempt %d)\n", id, x.ID, x.Attempt)
				return err
			}
			_, err := fmt.Fprintf(w, "Killed execution %d: %s %s\n", x.ID, x.State, termSafe(x.HandleMsg))
			return err
		})
	})
	return cmd
}

// newExecutorListCmd is `sundial executor list`: the live executor instances the server's
// registry holds. It is the one API command under `executor`, so it carries the API flags
// itself (the executor's own --token is the executor token).
func newExecutorListCmd() *cobra.Command {
	o := &apiOptions{}
	var p pageOptions
	var app string
	cmd := &cobra.Command{Use: "list [--app NAME]", Short: "List the live executor instances", Args: cobra.NoArgs}
	o.addFlags(cmd)
	p.addFlags(cmd)
	cmd.Flags().StringVar(&app, "app", "", "only this app's executors")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.Executor], error) {
			return c.ListExecutors(ctx, app, lo)
		})
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "APP ADDRESS VERSION HANDLERS RUNNING REGISTERED LAST-HEARTBEAT",
			func(x api.Executor) []string {
				return []string{x.App, x.Address, x.Version, strings.Join(x.Handlers, ","), strconv.Itoa(x.Running),
					when(x.RegisteredAt), when(x.LastSeen)}
			})
	})
	return cmd
}
