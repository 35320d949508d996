package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/api"
)

func newCalendarCmd() *cobra.Command {
	o := &apiOptions{}
	return group("calendar", "Manage exclusion calendars", o,
		newCalendarPutCmd(o), newCalendarGetCmd(o), newCalendarListCmd(o), newCalendarDeleteCmd(o))
}

func newCalendarPutCmd(o *apiOptions) *cobra.Command {
	var spec, base, desc, zone string
	cmd := &cobra.Command{
		Use:   "put NAME --spec SPEC",
		Short: "Create or replace an exclusion calendar",
		Long: `Create or replace an exclusion calendar; triggers name it with --calendar. SPEC is one of
holiday:2024-12-25,2025-01-01  weekly:1,7 (1 = Sunday)  monthly:1,15  annual:12-25
daily:12:00-13:00  daily!:09:00-17:00 (everything outside)  cron:EXPR.
--base names another stored calendar whose exclusions add to this one's. --zone reads the
calendar in that zone whatever the zone of the trigger it modifies (Quartz's calendar
TimeZone); without it, a calendar is read in its trigger's zone.`,
		Example: `  sundial calendar put weekends --spec weekly:1,7
  sundial calendar put holidays --spec holiday:2024-12-25,2025-01-01 --base weekends
  sundial calendar put ny-weekends --spec weekly:1,7 --zone America/New_York`,
		Args: cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&spec, "spec", "", "what the calendar excludes (required)")
	f.StringVar(&base, "base", "", "another stored calendar to add to this one")
	f.StringVar(&desc, "description", "", "what the calendar is for")
	f.StringVar(&zone, "zone", "", "IANA zone the calendar is read in (default: each trigger's zone)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if spec == "" {
			return usageErrorf("--spec: give what the calendar excludes, e.g. weekly:1,7")
		}
		cal, err := c.PutCalendar(ctx, args[0], api.CalendarRequest{Spec: spec, Base: base, Zone: zone, Description: desc})
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, cal, showCalendar)
	})
	return cmd
}

func showCalendar(w io.Writer, cal api.Calendar) error {
	return fields(w, "Name", cal.Name, "Spec", cal.Spec, "Base", cal.Base, "Zone", cal.Zone, "Description", cal.Description,
		"Updated", when(cal.UpdatedAt))
}

func newCalendarGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get NAME", Short: "Show an exclusion calendar", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		cal, err := c.GetCalendar(ctx, args[0])
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, cal, showCalendar)
	})
	return cmd
}

func newCalendarListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	cmd := &cobra.Command{Use: "list", Short: "List exclusion calendars", Args: cobra.NoArgs}
	p.addFlags(cmd)
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, c.ListCalendars)
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "NAME SPEC BASE ZONE DESCRIPTION UPDATED", func(cal api.Calendar) []string {
			return []string{cal.Name, cal.Spec, cal.Base, cal.Zone, cal.Description, when(cal.UpdatedAt)}
		})
	})
	return cmd
}

func newCalendarDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME", Short: "Delete an exclusion calendar", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if err := c.DeleteCalendar(ctx, args[0]); err != nil {
			return err
		}
		if !o.machine() {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted calendar %s\n", args[0])
		}
		return nil
	})
	return cmd
}

func newNodeCmd() *cobra.Command {
	o := &apiOptions{}
	var p pageOptions
	listCmd := &cobra.Command{Use: "list", Short: "List the cluster's scheduler nodes", Args: cobra.NoArgs}
	p.addFlags(listCmd)
	listCmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.Node], error) {
			return c.ListNodes(ctx, lo)
		})
		if err != nil {
			return err
		}
		err = printList(cmd.OutOrStdout(), o, l, "ID NAME ROLE HEALTH LAST-SEEN STARTED", func(n api.Node) []string {
			role, health := "member", "live"
			if n.Leader {
				role = "leader"
			}
			if !n.Live {
				health = "dead" // missed its heartbeats: its runs are recovered
			}
			return []string{n.ID, n.Name, role, health, when(n.LastSeen), when(n.StartedAt)}
		})
		if err != nil || o.machine() {
			return err
		}
		for _, n := range l.Items {
			if n.Self {
				fmt.Fprintf(cmd.OutOrStdout(), "Answered by node %s.\n", n.ID)
			}
		}
		return nil
	})
	info := &cobra.Command{Use: "info", Short: "Show which Sundial the server answering runs", Args: cobra.NoArgs}
	info.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		in, err := c.Info(ctx)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, in, func(w io.Writer, in api.Info) error {
			return fields(w, "Version", in.Version, "Go", in.GoVersion, "Node", in.NodeID)
		})
	})
	return group("node", "Show the cluster's nodes", o, listCmd, info)
}

func newTokenCmd() *cobra.Command {
	o := &apiOptions{}
	return group("token", "Manage your API tokens (an admin sees everyone's)", o, newTokenCreateCmd(o), newTokenListCmd(o), newTokenDeleteCmd(o))
}

func newTokenCreateCmd(o *apiOptions) *cobra.Command {
	var expires, login, role, scope string
	var scripts bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an API token (its secret is shown once)",
		Long: `Create an API token. Its secret is printed once; keep it and pass it as --token or SUNDIAL_TOKEN.
Without a token yet (the first time), --login USER logs in with the password read from
standard input instead.`,
		Example: `  echo "$ADMIN_PASSWORD" | sundial token create laptop --login admin
  sundial token create ci --expires 720h`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&expires, "expires", "", "when the token stops working: RFC 3339 or a duration from now (720h)")
	cmd.Flags().StringVar(&login, "login", "", "log in as this user, password on standard input, instead of using a token")
	cmd.Flags().StringVar(&role, "role", "", "narrow the token to this role (viewer, operator, admin; default yours)")
	cmd.Flags().StringVar(&scope, "scope", "", "narrow the token to these apps, separated by commas (default your scope)")
	cmd.Flags().BoolVar(&scripts, "scripts", false, "let the token make script jobs (needs your scripts permission)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		req := api.TokenRequest{Name: args[0], Role: role, Scope: splitScope(scope), Scripts: scripts}
		if expires != "" {
			if d, err := time.ParseDuration(expires); err == nil {
				if d <= 0 {
					return usageErrorf("--expires %s: want a positive duration", expires)
				}
				req.ExpiresAt = time.Now().Add(d).UTC().Format(time.RFC3339)
			} else {
				req.ExpiresAt = expires // the server checks it and names the field
			}
		}
		if login != "" {
			pw, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			pw = strings.TrimRight(pw, "\r\n")
			if pw == "" {
				return usageErrorf("--login %s: write the password on standard input (read: %v)", login, err)
			}
			if _, err := c.Login(ctx, login, pw); err != nil {
				if api.StatusOf(err) == http.StatusUnauthorized {
					return fmt.Errorf("log in as %q: wrong user name or password", login)
				}
				return fmt.Errorf("log in as %q: %w", login, cliError(c, err))
			}
		}
		tok, err := c.CreateToken(ctx, req)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, tok, func(w io.Writer, t api.Token) error {
			_, err := fmt.Fprintf(w, "Created token %d %q. Its secret, shown only this once:\n\n    %s\n\n", t.ID, t.Name, t.Token)
			return err
		})
	})
	return cmd
}

func newTokenListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	cmd := &cobra.Command{Use: "list", Short: "List API tokens", Args: cobra.NoArgs}
	p.addFlags(cmd)
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, c.ListTokens)
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID NAME PREFIX USER ROLE SCOPE CREATED EXPIRES LAST-USED", func(t api.Token) []string {
			return []string{itoa(t.ID), t.Name, t.Prefix + "…", itoa(t.UserID), t.Role, strings.Join(t.Scope, ","), when(t.CreatedAt),
				when(t.ExpiresAt), when(t.LastUsedAt)}
		})
	})
	return cmd
}

func newTokenDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete ID", Short: "Delete an API token", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("token", args[0])
		if err != nil {
			return err
		}
		if err := c.DeleteToken(ctx, id); err != nil {
			return err
		}
		if !o.machine() {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted token %d\n", id)
		}
		return nil
	})
	return cmd
}
