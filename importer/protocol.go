package importer

import "github.com/sundial-scheduler/sundial/store"

// applyProtocol is the one place an import gives an app its executor protocol: a source
// sets App.Protocol ("xxl-job") and App.Generation ("2.x", "3.3", "3.5"), and this carries
// them onto what the scheduler stores.
//
// COORDINATOR: the protocol generation is stored by branch xxlapi (migration 00019). Once
// both branches are in main, set it here, e.g. `a.App.Generation = a.Generation`, and
// compare it in generationChanges; until then the generation is only printed.
func applyProtocol(a *App) {}

// generationChanges names the generation as changed when the stored app's differs from
// the planned one. COORDINATOR: see applyProtocol.
func generationChanges(cur *store.App, a *App) []string { return nil }
