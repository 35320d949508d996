// Package web is Sundial's console: the operator's pages (dashboard, jobs and their editor,
// executions with a live output tail, apps and executors, nodes, calendars, API tokens),
// rendered on the server with html/template and made interactive with htmx. It owns the
// pages, their assets (vendored from npm at pinned versions and embedded, so the console
// works offline) and the console's session handling: login, CSRF tokens, logout and the
// password change.
//
// Every change a page makes goes through the REST API's own handlers, called in-process
// with the signed-in user's session, so the console and the API share one validation, one
// error text and one access check. Pages read what they show from the store.
package web
