package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/internal/oraclecase"
)

// newScheduleCompareCmd checks Sundial's answers against a file of Quartz's, the comparison
// the oracle test makes, for a user who wants to see it for themselves.
func newScheduleCompareCmd() *cobra.Command {
	var divergences string
	cmd := &cobra.Command{
		Use:   "compare EXPECTED",
		Short: "Compare Sundial's answers with the real Quartz's",
		Long: `Evaluate every case of EXPECTED, a file in the Quartz oracle's output format (the cases
and the answers Quartz 2.3.2 gave; schedule/testdata/quartz-expected.txt holds its corpus), and
print each case where Sundial answers differently. Cases listed in --divergences are where
Sundial differs on purpose: they are counted by reason. It fails when any other case differs.`,
		Example: `  sundial schedule compare schedule/testdata/quartz-expected.txt --divergences schedule/testdata/divergences.txt`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			named := map[string]string{}
			if divergences != "" {
				f, err := os.Open(divergences)
				if err != nil {
					return usageErrorf("--divergences: %v", err)
				}
				named, err = oraclecase.ReadDivergences(f)
				f.Close()
				if err != nil {
					return usageErrorf("--divergences: %v", err)
				}
			}
			f, err := os.Open(args[0])
			if err != nil {
				return usageErrorf("%v", err)
			}
			want, err := oraclecase.ReadExpected(f)
			f.Close()
			if err != nil {
				return usageErrorf("%s: %v", args[0], err)
			}
			out := cmd.OutOrStdout()
			var reasons []string
			byReason := map[string]int{}
			same, unexplained := 0, 0
			for _, w := range want {
				diff := oraclecase.Compare(oraclecase.Evaluate(w.Input), w)
				reason, isNamed := named[w.Input]
				switch {
				case diff == "" && isNamed:
					fmt.Fprintf(out, "matches Quartz but is listed as a divergence: %s\n", w.Input)
					unexplained++
				case diff == "":
					same++
				case isNamed:
					if byReason[reason] == 0 {
						reasons = append(reasons, reason)
					}
					byReason[reason]++
				default:
					fmt.Fprintf(out, "differs: %s: %s\n", w.Input, diff)
					unexplained++
				}
			}
			for _, r := range reasons {
				fmt.Fprintf(out, "%d named divergence(s): %s\n", byReason[r], r)
			}
			fmt.Fprintf(out, "%d cases: %d answered as Quartz did, %d named divergences, %d other differences\n",
				len(want), same, len(want)-same-unexplained, unexplained)
			if unexplained > 0 {
				return fmt.Errorf("%d cases differ from Quartz without a named reason", unexplained)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&divergences, "divergences", "", "file of the cases Sundial answers differently on purpose, each group under its reason")
	return cmd
}
