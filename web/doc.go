// Package web is Sundial's console: the operator's pages (dashboard, jobs and their editor,
// executions with a live output tail, apps and executors, nodes, calendars, API tokens),
// rendered on the server with html/template and made interactive with htmx. It owns the
// pages, their assets (vendored from npm at pinned versions and embedded, so the console
// works offline) and the console's session handling: login, CSRF tokens, logout and the
// password change.
//
// Every page reads and changes through the server's service layer (server.Ops): the same
// typed operations the REST API's routes bind to HTTP, called in process with the signed-in
// person's principal in the context (server.SignedIn). So the console and the API share one
// validation, one access check and one error map (server.ErrorOf); the console has no
// database of its own (TestConsoleUsesOnlyTheServiceLayer keeps it so).
package web
