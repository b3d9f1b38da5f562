// Package program is how the gateway runs a program the owner installed
// on its host: source adapters (`nas serve --source-adapters DIR`) and
// command checks (`nas serve --check-commands DIR`) both go through it.
//
// Vocabulary:
//   - Folder: the one directory the owner named for a kind of program.
//     Allow admits a path only when it resolves (symbolic links first)
//     to a regular, executable file inside it, so no link leads out.
//   - Env: the environment a program runs in, the gateway's less every
//     NAS_* and AWS_* variable (the gateway's own credentials).
//   - Group: a program runs in a process group of its own (SetGroup), so
//     KillGroup stops it and whatever it started.
//
// The package holds no state and imports nothing of ours.
package program
