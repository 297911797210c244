// Package version is the Drover release every binary reports: the
// controller to its clients and in status, the hub, and the CLI.
package version

// Version is the Drover release.
const Version = "0.1.0"
