//go:build !unix

package rawhttp

// CPUTime returns 0: this platform has no getrusage, and the benchmarks'
// CPU metrics read 0.
func CPUTime() int64 { return 0 }
