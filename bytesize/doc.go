// Package bytesize reads byte counts written for people ("500MiB",
// "10GB", "1.5 GiB") for command-line flags. It is a leaf: the gateway's
// command and the benchmark harness's command share it.
package bytesize
