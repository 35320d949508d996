package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/api"
)

// The user and audit commands: people, their roles and scopes, and the log of changes.

func newUserCmd() *cobra.Command {
	o := &apiOptions{}
	cmd := group("user", "Manage users, their roles and scopes (admin), and your own password", o,
		newUserCreateCmd(o), newUserListCmd(o), newUserUpdateCmd(o), newUserDisableCmd(o),
		newUserResetCmd(o), newUserPasswdCmd(o))
	cmd.Long = "Manage users. USER is a user's id or name; name:NAME is the name alone (a user named \"40\" is name:40)."
	return cmd
}

// readLines reads n lines from standard input (passwords: never flags, which other users
// of the machine can read in the process list).
func readLines(r io.Reader, n int, what string) ([]string, error) {
	br := bufio.NewReader(r)
	out := make([]string, n)
	for i := range out {
		line, err := br.ReadString('\n')
		out[i] = strings.TrimRight(line, "\r\n")
		if out[i] == "" {
			return nil, usageErrorf("write %s on standard input, one a line (read: %v)", what, err)
		}
	}
	return out, nil
}

// splitScope reads --scope: app names separated by commas, or * for every app.
func splitScope(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func showUser(w io.Writer, u api.User) error {
	return fields(w, "ID", itoa(u.ID), "Name", u.Name, "Role", u.Role, "Scope", strings.Join(u.Scope, ","),
		"Scripts", yesNo(u.Scripts), "Disabled", yesNo(u.Disabled), "Created", when(u.CreatedAt), "Updated", when(u.UpdatedAt))
}

func newUserCreateCmd(o *apiOptions) *cobra.Command {
	var role, scope string
	var scripts bool
	cmd := &cobra.Command{
		Use:   "create NAME --role ROLE",
		Short: "Create a user; the password is read from standard input",
		Long: `Create a user. Roles: admin (users, credentials, apps, settings, audit), operator (create,
edit, run and pause the jobs of the apps in --scope), viewer (read only, output included).
--scripts allows jobs with script handlers (shell and the like). The password (standard
input) needs 12 characters and must not be easy to guess.`,
		Example: `  echo "$PASSWORD" | sundial user create ana --role operator --scope billing,mail`,
		Args:    cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&role, "role", "", "admin, operator or viewer (required)")
	f.StringVar(&scope, "scope", "*", "apps the user may act on, separated by commas, or * for every app")
	f.BoolVar(&scripts, "scripts", false, "allow jobs with script handlers (shell and the like)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if role == "" {
			return usageErrorf("--role: give admin, operator or viewer")
		}
		pw, err := readLines(cmd.InOrStdin(), 1, "the password")
		if err != nil {
			return err
		}
		u, err := c.CreateUser(ctx, api.UserRequest{Name: args[0], Password: pw[0], Role: role, Scope: splitScope(scope), Scripts: scripts})
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, u, showUser)
	})
	return cmd
}

func newUserListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	cmd := &cobra.Command{Use: "list", Short: "List users", Args: cobra.NoArgs}
	p.addFlags(cmd)
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, c.ListUsers)
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID NAME ROLE SCOPE SCRIPTS DISABLED", func(u api.User) []string {
			return []string{itoa(u.ID), u.Name, u.Role, strings.Join(u.Scope, ","), yesNo(u.Scripts), yesNo(u.Disabled)}
		})
	})
	return cmd
}

func newUserUpdateCmd(o *apiOptions) *cobra.Command {
	var role, scope string
	var scripts, enable bool
	cmd := &cobra.Command{
		Use:     "update USER",
		Short:   "Change a user's role, scope or scripts permission (by id or name)",
		Long:    "Change a user's role, scope or scripts permission; narrowing them ends the user's sessions.",
		Example: "  sundial user update ana --role viewer --scope '*'\n  sundial user update ana --enable",
		Args:    cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&role, "role", "", "admin, operator or viewer")
	f.StringVar(&scope, "scope", "", "apps separated by commas, or * for every app")
	f.BoolVar(&scripts, "scripts", false, "allow (or with --scripts=false forbid) script handlers")
	f.BoolVar(&enable, "enable", false, "enable a disabled user")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		var req api.UserUpdate
		if role != "" {
			req.Role = &role
		}
		if scope != "" {
			s := splitScope(scope)
			req.Scope = &s
		}
		if cmd.Flags().Changed("scripts") {
			req.Scripts = &scripts
		}
		if enable {
			no := false
			req.Disabled = &no
		}
		if req == (api.UserUpdate{}) {
			return usageErrorf("give what to change: --role, --scope, --scripts or --enable")
		}
		return updateUser(ctx, c, cmd, o, args[0], req)
	})
	return cmd
}

func updateUser(ctx context.Context, c *api.Client, cmd *cobra.Command, o *apiOptions, who string, req api.UserUpdate) error {
	id, err := userID(ctx, c, who)
	if err != nil {
		return err
	}
	u, err := c.UpdateUser(ctx, id, req)
	if err != nil {
		return err
	}
	return printOne(cmd.OutOrStdout(), o, u, showUser)
}

func newUserDisableCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "disable USER", Short: "Disable a user and end their sessions (by id or name)", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		yes := true
		return updateUser(ctx, c, cmd, o, args[0], api.UserUpdate{Disabled: &yes})
	})
	return cmd
}

func newUserResetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset-password USER",
		Short: "Make a one-time password reset token for a user and end their sessions",
		Long: `Make a one-time password reset token for a user (by id or name) and end their sessions. Hand
the token to the user, who sets a new password with: sundial user passwd --reset-token TOKEN`,
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := userID(ctx, c, args[0])
		if err != nil {
			return err
		}
		r, err := c.ResetPassword(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, r, func(w io.Writer, r api.PasswordReset) error {
			_, err := fmt.Fprintf(w, "Reset token for user %s, shown only this once, valid until %s:\n\n    %s\n\n", args[0], when(r.ExpiresAt), r.Token)
			return err
		})
	})
	return cmd
}

func newUserPasswdCmd(o *apiOptions) *cobra.Command {
	var reset string
	cmd := &cobra.Command{
		Use:   "passwd",
		Short: "Change your own password (current and new on standard input), or set one with a reset token",
		Long: `Change your own password: write the current password and then the new one on standard input,
one a line. Your other sessions end. With --reset-token, write only the new password.`,
		Example: `  printf '%s\n%s\n' "$OLD" "$NEW" | sundial user passwd
  echo "$NEW" | sundial user passwd --reset-token sdr_...`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&reset, "reset-token", "", "a reset token from an admin (sundial user reset-password)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		if reset != "" {
			pw, err := readLines(cmd.InOrStdin(), 1, "the new password")
			if err != nil {
				return err
			}
			if err := c.RedeemReset(ctx, api.ResetRequest{Token: reset, NewPassword: pw[0]}); err != nil {
				return err
			}
		} else {
			pw, err := readLines(cmd.InOrStdin(), 2, "the current and the new password")
			if err != nil {
				return err
			}
			if err := c.ChangePassword(ctx, api.PasswordRequest{CurrentPassword: pw[0], NewPassword: pw[1]}); err != nil {
				return err
			}
		}
		if !o.machine() {
			fmt.Fprintln(cmd.OutOrStdout(), "Password changed")
		}
		return nil
	})
	return cmd
}

func newAuditCmd() *cobra.Command {
	o := &apiOptions{}
	var p pageOptions
	var f api.AuditFilter
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the audit log, newest first (admin)",
		Example: "  sundial audit list --actor ana --from 2026-01-01T00:00:00Z\n  sundial audit list --action auth.login_failed",
		Args:    cobra.NoArgs,
	}
	p.addFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.Actor, "actor", "", "only changes by this user")
	fl.StringVar(&f.Action, "action", "", "only this action (job.update, user.create, auth.login_failed, ...)")
	fl.StringVar(&f.TargetKind, "kind", "", "only targets of this kind (job, trigger, calendar, app, user, token, execution)")
	fl.StringVar(&f.Target, "target", "", "only this target (its id or name)")
	fl.StringVar(&f.From, "from", "", "only changes at or after this time (RFC 3339)")
	fl.StringVar(&f.To, "to", "", "only changes before this time (RFC 3339)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.AuditEntry], error) {
			q := f
			q.ListOptions = lo
			return c.ListAudit(ctx, q)
		})
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID AT ACTOR SOURCE ACTION TARGET", func(e api.AuditEntry) []string {
			return []string{itoa(e.ID), when(e.At), e.Actor, e.Source, e.Action, e.TargetKind + " " + e.Target}
		})
	})
	return group("audit", "Read the audit log of changes (admin)", o, cmd)
}
