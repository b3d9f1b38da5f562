// Command nas is the Agent NAS gateway and its command-line client.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}
