package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
)

// apiOptions are the flags every command over the REST API shares. They are persistent flags
// of each API command group rather than of the root, so `sundial server` and `sundial bench`
// keep their own -o and do not show --token.
type apiOptions struct {
	server, token, output string
}

const defaultServer = "http://localhost:8080"

func (o *apiOptions) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.server, "server", "", "server URL (default $SUNDIAL_SERVER or "+defaultServer+")")
	f.StringVar(&o.token, "token", "", "API token (default $SUNDIAL_TOKEN)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
}

// client resolves the flags and the environment into a client; a flag wins over the
// environment.
func (o *apiOptions) client() (*api.Client, error) {
	if o.output != "table" && o.output != "json" && o.output != "yaml" {
		return nil, usageErrorf("--output %q: want table, json or yaml", o.output)
	}
	server := o.server
	if server == "" {
		server = os.Getenv("SUNDIAL_SERVER")
	}
	if server == "" {
		server = defaultServer
	}
	token := o.token
	if token == "" {
		token = os.Getenv("SUNDIAL_TOKEN")
	}
	return newAPIClient(server, token)
}

// machine reports whether the output is for programs (json or yaml) rather than a table.
func (o *apiOptions) machine() bool { return o.output == "json" || o.output == "yaml" }

// encode writes v in the output format: the API's JSON as the server encodes it, or the same
// document as YAML (the JSON field names).
func (o *apiOptions) encode(w io.Writer, v any) error {
	if o.output != "yaml" {
		return writeJSON(w, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeYAML(w, b)
}

// writeYAML writes a JSON document as YAML.
func writeYAML(w io.Writer, jsonDoc []byte) error {
	y, err := yaml.JSONToYAML(jsonDoc)
	if err != nil {
		return fmt.Errorf("yaml: %w", err)
	}
	_, err = w.Write(y)
	return err
}

// run makes a RunE that resolves the client from the flags, then calls fn with it and
// turns the API's errors into the CLI's.
func (o *apiOptions) run(fn func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := o.client()
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		return cliError(c, fn(ctx, c, cmd, args))
	}
}

// group makes a command group (job, trigger, ...) whose subcommands share o's flags.
func group(name, short string, o *apiOptions, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: name, Short: short}
	o.addFlags(cmd)
	cmd.AddCommand(subs...)
	return cmd
}

// newAPICommands returns the CLI over the REST API.
func newAPICommands() []*cobra.Command {
	return []*cobra.Command{newJobCmd(), newTriggerCmd(), newExecCmd(), newAppCmd(), newCalendarCmd(), newNodeCmd(), newTokenCmd(),
		newUserCmd(), newAuditCmd(), newBackfillCmd(), newWorkflowCmd()}
}

// parseID reads a positional numeric id.
func parseID(what, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, usageErrorf("%s id %q: want a positive integer", what, s)
	}
	return n, nil
}

// pageOptions are the keyset-pagination flags of a list command.
type pageOptions struct {
	limit int
	after string
	all   bool
}

func (p *pageOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&p.limit, "limit", 0, "rows per page (1..1000; default the server's, 100)")
	f.StringVar(&p.after, "after", "", "start after this cursor (the next value a previous page printed)")
	f.BoolVar(&p.all, "all", false, "fetch every page")
}

// list fetches a list with the pagination flags, following next cursors when --all is set.
func list[T any](ctx context.Context, p *pageOptions, fetch func(context.Context, api.ListOptions) (*api.Page[T], error)) (api.Page[T], error) {
	if p.limit != 0 && (p.limit < 1 || p.limit > 1000) {
		return api.Page[T]{}, usageErrorf("--limit %d: want 1..1000", p.limit)
	}
	opts := api.ListOptions{Limit: p.limit, After: p.after}
	out := api.Page[T]{Items: []T{}}
	for {
		pg, err := fetch(ctx, opts)
		if err != nil {
			return api.Page[T]{}, err
		}
		out.Items = append(out.Items, pg.Items...)
		out.Next = pg.Next
		if !p.all || pg.Next == nil {
			return out, nil
		}
		if *pg.Next == opts.After {
			// A server that hands back the same cursor would loop forever.
			return api.Page[T]{}, fmt.Errorf("list: the server repeated the cursor %q", opts.After)
		}
		opts.After = *pg.Next
	}
}

// printList prints a fetched list: JSON in the API's page shape, or a table made by row from
// each item, followed by the next cursor when a page was left unread.
func printList[T any](w io.Writer, o *apiOptions, l api.Page[T], header string, row func(T) []string) error {
	if o.machine() {
		return o.encode(w, l)
	}
	tw := newTable(w, header)
	for _, v := range l.Items {
		tw.row(row(v)...)
	}
	if err := tw.flush(); err != nil {
		return err
	}
	if l.Next != nil {
		fmt.Fprintf(w, "(more: --after %s, or --all)\n", *l.Next)
	}
	return nil
}

// printOne prints one object: the API's JSON, or the table form show makes of it.
func printOne[T any](w io.Writer, o *apiOptions, v *T, show func(io.Writer, T) error) error {
	if o.machine() {
		return o.encode(w, v)
	}
	return show(w, *v)
}

// writeJSON writes v as the server does: one line, HTML characters as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table is an aligned text table.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.tw, strings.Join(strings.Fields(header), "\t"))
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			c = "-"
		}
		// A tab or newline in a value (a message, a description) would break the columns.
		cells[i] = termSafe(strings.NewReplacer("\t", " ", "\n", " ").Replace(c))
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// fields prints label/value pairs, one a line, aligned.
func fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], termSafe(v))
	}
	return tw.Flush()
}

// when shows an API time in local time ("" for none).
func when(t api.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Time().Local().Format("2006-01-02 15:04:05")
}

// termSafe escapes control characters, invisible format characters (Unicode Cf: bidi
// controls, zero-width spaces) and invalid UTF-8 in text from the server before it reaches
// a terminal: names and output are other people's input, an escape sequence in them could
// rewrite the screen, the title or the clipboard, and a bidi control makes text print as
// other text. The server refuses such names now (sundial.CheckName); this shows the ones
// stored before, and output, as they are.
func termSafe(s string) string {
	if !strings.ContainsFunc(s, sundial.Unprintable) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r) && r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		case sundial.Unprintable(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// msDuration shows milliseconds as a Go duration ("" for zero).
func msDuration(ms int64) string {
	if ms == 0 {
		return ""
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// jobArg resolves the job a command takes as its argument, or (as it used to) as --job.
func jobArg(ctx context.Context, c *api.Client, args []string, flag string) (int64, error) {
	switch {
	case len(args) == 1 && flag != "" && flag != args[0]:
		return 0, usageErrorf("the job is given twice, as %q and --job %q: give it once", args[0], flag)
	case len(args) == 1:
		return jobRef(ctx, c, args[0])
	case flag == "":
		return 0, usageErrorf("give the job: its id, NAME or GROUP/NAME")
	}
	return jobRef(ctx, c, flag)
}
