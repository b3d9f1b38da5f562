// Package bench holds the gateway's benchmarks. They run the real gateway
// (nastest) or the real branch service and report, beside the absolute
// numbers, ratios to a baseline measured in the same run.
//
//	go test -run '^$' -bench . -benchtime 3x ./bench
package bench
