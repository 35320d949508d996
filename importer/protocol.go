package importer

import "github.com/sundial-scheduler/sundial/store"

// applyProtocol is the one place an import gives an app its executor protocol: a source
// sets App.Protocol (store.ProtocolXXLJob) and App.Generation ("2.x", "3.3", "3.5"), and this
// carries them onto what the scheduler stores.
func applyProtocol(a *App) {
	if a.Generation != "" {
		a.App.ProtocolVersion = a.Generation
	}
}

// generationChanges names the protocol generation as changed when the stored app's differs
// from the planned one.
func generationChanges(cur *store.App, a *App) []string {
	if a.App.ProtocolVersion != "" && cur.ProtocolVersion != a.App.ProtocolVersion {
		return []string{"protocol_version"}
	}
	return nil
}
