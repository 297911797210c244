// Package web holds the dashboard served by the hub and a standalone spoke.
// Not built yet: tracked by its own issue.
package web
