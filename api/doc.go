// Package api owns Sundial's REST wire format: the request and response bodies of the API
// under /api/v1 (jobs, triggers and their schedules, calendars, executions, nodes, tokens,
// apps, executors, reports), its one error shape, and Client, the typed Go client the CLI
// and the tests use. The server encodes and decodes with these types, so a field is named
// in one place; the executor protocol's bodies are the executor package's.
//
// Schedule is the one parser and printer of a trigger's schedule object. Bad input is
// reported as a *schedule.FieldError naming the field as the JSON does ("cron",
// "daily_interval.unit"); a caller nests it under its own path ("triggers[0]").
package api
