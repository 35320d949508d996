package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// newClusterKeyCmd is `sundial cluster-key list|rotate`: the key pair that signs the server's
// calls to executors lives in the database (made by the first node), so these work on the
// database directly, as migrate does; whoever may run them can read the key anyway.
func newClusterKeyCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "cluster-key",
		Short: "List or rotate the key that signs the servers' calls to executors",
		Long: `Every call a server makes to an executor (/run, /kill, /beat, /idle-beat) is signed with the
cluster's Ed25519 key, kept in the database and shared by every node; executors receive its
public half in each heartbeat answer (docs/executor-protocol.md, "Signed calls").

rotate adds the next generation. Executors are given it with their next heartbeat, beside the
one before; nodes sign with it once it is (3+1) heartbeat intervals old, and the generation
before it stays trusted until the next rotation. Wait that long between two rotations.

--db can also be set as SUNDIAL_DB.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "sundial.db", "database: a SQLite path, postgres://… or mysql://user@tcp(host:3306)/db")
	list := &cobra.Command{Use: "list", Short: "List the key's generations, newest first (public halves only)", Args: cobra.NoArgs,
		RunE: withStore(&db, true, func(ctx context.Context, cmd *cobra.Command, st *sqlstore.Store) error {
			keys, err := st.ClusterKeys(ctx)
			if err != nil {
				return err
			}
			t := newTable(cmd.OutOrStdout(), "GENERATION ID CREATED PUBLISHED PUBLIC_KEY")
			for i, k := range keys {
				t.row(itoa(k.Generation), execsign.KeyID(k.PublicKey), time.UnixMilli(k.CreatedAt).Local().Format("2006-01-02 15:04:05"),
					map[bool]string{true: "yes", false: "no"}[i < dispatch.PublishedKeys], k.PublicKey)
			}
			return t.flush()
		})}
	rotate := &cobra.Command{Use: "rotate", Short: "Add the next generation of the key", Args: cobra.NoArgs,
		RunE: withStore(&db, true, func(ctx context.Context, cmd *cobra.Command, st *sqlstore.Store) error {
			k, err := dispatch.RotateClusterKey(ctx, st, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Added cluster key generation %d (id %s); nodes sign with it once executors have had a few heartbeats to learn it\n",
				k.Generation, execsign.KeyID(k.PublicKey))
			return nil
		})}
	cmd.AddCommand(list, rotate)
	return cmd
}
