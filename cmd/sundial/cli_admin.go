package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

type calendarView struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Spec        string  `json:"spec"`
	Base        string  `json:"base"`
	UpdatedAt   apiTime `json:"updated_at"`
}

func calendarPath(name string) string { return "/api/v1/calendars/" + url.PathEscape(name) }

func newCalendarCmd() *cobra.Command {
	o := &apiOptions{}
	return group("calendar", "Manage exclusion calendars", o,
		newCalendarPutCmd(o), newCalendarGetCmd(o), newCalendarListCmd(o), newCalendarDeleteCmd(o))
}

func newCalendarPutCmd(o *apiOptions) *cobra.Command {
	var spec, base, desc string
	cmd := &cobra.Command{
		Use:   "put NAME --spec SPEC",
		Short: "Create or replace an exclusion calendar",
		Long: `Create or replace an exclusion calendar; triggers name it with --calendar. SPEC is one of
holiday:2024-12-25,2025-01-01  weekly:1,7 (1 = Sunday)  monthly:1,15  annual:12-25
daily:12:00-13:00  daily!:09:00-17:00 (everything outside)  cron:EXPR.
--base names another stored calendar whose exclusions add to this one's.`,
		Example: `  sundial calendar put weekends --spec weekly:1,7
  sundial calendar put holidays --spec holiday:2024-12-25,2025-01-01 --base weekends`,
		Args: cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&spec, "spec", "", "what the calendar excludes (required)")
	f.StringVar(&base, "base", "", "another stored calendar to add to this one")
	f.StringVar(&desc, "description", "", "what the calendar is for")
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, args []string) error {
		if spec == "" {
			return usageErrorf("--spec: give what the calendar excludes, e.g. weekly:1,7")
		}
		body, err := c.do(ctx, "PUT", calendarPath(args[0]), nil,
			map[string]string{"spec": spec, "base": base, "description": desc})
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, body, showCalendar)
	})
	return cmd
}

func showCalendar(w io.Writer, cal calendarView) error {
	return fields(w, "Name", cal.Name, "Spec", cal.Spec, "Base", cal.Base, "Description", cal.Description,
		"Updated", cal.UpdatedAt.String())
}

func newCalendarGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get NAME", Short: "Show an exclusion calendar", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, args []string) error {
		body, err := c.do(ctx, "GET", calendarPath(args[0]), nil, nil)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, body, showCalendar)
	})
	return cmd
}

func newCalendarListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	cmd := &cobra.Command{Use: "list", Short: "List exclusion calendars", Args: cobra.NoArgs}
	p.addFlags(cmd)
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
		l, err := p.list(ctx, c, "/api/v1/calendars", nil)
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "NAME SPEC BASE DESCRIPTION UPDATED", func(cal calendarView) []string {
			return []string{cal.Name, cal.Spec, cal.Base, cal.Description, cal.UpdatedAt.String()}
		})
	})
	return cmd
}

func newCalendarDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME", Short: "Delete an exclusion calendar", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, args []string) error {
		if _, err := c.do(ctx, "DELETE", calendarPath(args[0]), nil, nil); err != nil {
			return err
		}
		if !o.json() {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted calendar %s\n", args[0])
		}
		return nil
	})
	return cmd
}

type nodeView struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	StartedAt apiTime `json:"started_at"`
	LastSeen  apiTime `json:"last_seen"`
	Leader    bool    `json:"leader"`
	Self      bool    `json:"self"`
}

func newNodeCmd() *cobra.Command {
	o := &apiOptions{}
	list := &cobra.Command{Use: "list", Short: "List the cluster's scheduler nodes", Args: cobra.NoArgs}
	list.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
		// The server lists every node in one page: a cluster has a handful.
		body, err := c.do(ctx, "GET", "/api/v1/nodes", nil, nil)
		if err != nil {
			return err
		}
		if o.json() {
			return writeRaw(cmd.OutOrStdout(), body)
		}
		var l listed
		if err := json.Unmarshal(body, &l); err != nil {
			return fmt.Errorf("decode nodes: %w", err)
		}
		return printList(cmd.OutOrStdout(), o, l, "ID NAME LEADER ANSWERED STARTED LAST-SEEN", func(n nodeView) []string {
			return []string{n.ID, n.Name, yesNo(n.Leader), yesNo(n.Self), n.StartedAt.String(), n.LastSeen.String()}
		})
	})
	return group("node", "Show the cluster's nodes", o, list)
}

type tokenView struct {
	ID        int64   `json:"id"`
	UserID    int64   `json:"user_id"`
	Name      string  `json:"name"`
	Prefix    string  `json:"prefix"`
	CreatedAt apiTime `json:"created_at"`
	ExpiresAt apiTime `json:"expires_at"`
	Token     string  `json:"token"`
}

func newTokenCmd() *cobra.Command {
	o := &apiOptions{}
	return group("token", "Manage API tokens (admin only)", o, newTokenCreateCmd(o), newTokenListCmd(o), newTokenDeleteCmd(o))
}

func newTokenCreateCmd(o *apiOptions) *cobra.Command {
	var expires, login string
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
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, args []string) error {
		req := map[string]string{"name": args[0]}
		if expires != "" {
			if d, err := time.ParseDuration(expires); err == nil {
				if d <= 0 {
					return usageErrorf("--expires %s: want a positive duration", expires)
				}
				req["expires_at"] = time.Now().Add(d).UTC().Format(time.RFC3339)
			} else {
				req["expires_at"] = expires // the server checks it and names the field
			}
		}
		if login != "" {
			pw, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			pw = strings.TrimRight(pw, "\r\n")
			if pw == "" {
				return usageErrorf("--login %s: write the password on standard input (read: %v)", login, err)
			}
			if err := c.login(ctx, login, pw); err != nil {
				return err
			}
		}
		body, err := c.do(ctx, "POST", "/api/v1/tokens", nil, req)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, body, func(w io.Writer, t tokenView) error {
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
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
		l, err := p.list(ctx, c, "/api/v1/tokens", nil)
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID NAME PREFIX USER CREATED EXPIRES", func(t tokenView) []string {
			return []string{itoa(t.ID), t.Name, t.Prefix + "…", itoa(t.UserID), t.CreatedAt.String(), t.ExpiresAt.String()}
		})
	})
	return cmd
}

func newTokenDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete ID", Short: "Delete an API token", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, args []string) error {
		id, err := parseID("token", args[0])
		if err != nil {
			return err
		}
		if _, err := c.do(ctx, "DELETE", idPath("/api/v1/tokens", id, ""), nil, nil); err != nil {
			return err
		}
		if !o.json() {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted token %d\n", id)
		}
		return nil
	})
	return cmd
}
