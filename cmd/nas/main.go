// Command nas is the Agent NAS gateway and its command-line client.
package main

import (
	"os"
)

// main runs nas and exits with its status.
func main() {
	os.Exit(run(os.Args[1:]))
}
