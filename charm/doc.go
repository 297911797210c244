// Package charm parses and validates the charm and bundle formats described in
// CHARM-CONTRACT §1: metadata.yaml, config.yaml, actions.yaml, charmcraft.yaml
// source charms, manifest.yaml, .charm zip archives and bundle.yaml.
//
// Everything the rest of Drover learns about a charm comes from here, so the
// package keeps a few invariants:
//
//   - A value returned without error is fully validated: Meta endpoint names
//     are unique across roles, reserved names are used only where Juju allows
//     them, defaults agree with option types, action schemas compile.
//   - Every parse or validation failure matches ErrInvalid via errors.Is and
//     is (or joins) *Error values naming the file and field; I/O failures do
//     not match ErrInvalid, so callers can tell bad input from a broken disk.
//   - No input makes the package panic or allocate without bound: YAML is
//     decoded defensively and archives are checked against Limits before and
//     while they are read.
//   - Archives never escape their root: absolute names, ".." components,
//     duplicate entries, entries below a symlink and symlinks pointing outside
//     the charm are rejected, both when reading and when expanding.
//   - The package has no state: the only package-level variables are compiled
//     regular expressions and the ErrInvalid sentinel.
package charm
