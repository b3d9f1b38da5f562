package bench

// The built-in workloads, in the order they run and are reported. Each is
// defined in the file named after its family: objects.go (put to mixed),
// zerocopy.go (copy, multipart), dedup.go, memory.go, soak.go, curves.go (fork to
// list-scaling) and hash.go. Workloads registered with Register (such as
// the FUSE workloads in mount.go) run after these.
func init() {
	register(Workload{Name: "put", Doc: "PUT of new objects per size and concurrency, against write+fsync of plain files and loopback HTTP", Run: runPut}, true)
	register(Workload{Name: "get", Doc: "GET of objects in the page cache per size and concurrency, against reading plain files and loopback HTTP", Run: runGet}, true)
	register(Workload{Name: "get-cold", Doc: "GET of large objects after the page cache was emptied, against reading cold plain files", Run: runGetCold}, true)
	register(Workload{Name: "head", Doc: "HEAD of existing 4 KiB objects, against stat and loopback HTTP", Run: runHead}, true)
	register(Workload{Name: "list", Doc: "LIST (all pages) of a bucket, with and without a delimiter, against reading directories", Run: runList}, true)
	register(Workload{Name: "delete", Doc: "DELETE of existing 4 KiB objects, against unlink+fsync", Run: runDelete}, true)
	register(Workload{Name: "delete-many", Doc: "DeleteObjects of 20-key batches of 4 KiB objects from several clients, against unlinking the files and syncing their directory once a batch", Run: runDeleteMany}, true)
	register(Workload{Name: "mixed", Doc: "a mix of GET, PUT, HEAD, LIST and DELETE over 4 KiB and 1 MiB objects", Run: runMixed}, true)
	register(Workload{Name: "copy", Doc: "CopyObject of a large object, against copying the file (copy_file_range + fsync)", Run: runCopy}, true)
	register(Workload{Name: "multipart", Doc: "CompleteMultipartUpload of many 5 MiB parts, against concatenating the part files", Run: runMultipart}, true)
	register(Workload{Name: "dedup", Doc: "bytes stored after uploading one data set to two branches, and after a 1% edit of a large object", Run: runDedup}, true)
	register(Workload{Name: "memory", Doc: "server resident set while a large object is uploaded and downloaded (separate process)", Run: runMemory}, true)
	register(Workload{Name: "soak", Doc: "server resident set over time under 8 clients of 4 KiB PUT/GET, then of 64 MiB multipart PUT/GET (separate processes; --soak sets the length)", Run: runSoak}, true)
	register(Workload{Name: "fork", Doc: "fork time against the number of objects in the branch (flat is the target)", Run: runForkCurve}, true)
	register(Workload{Name: "commit", Doc: "commit time against staged changes at a fixed tree size, and against tree size at 100 changes", Run: runCommitCurve}, true)
	register(Workload{Name: "diff", Doc: "diff time against the number of changes at a fixed tree size, and against tree size at 100 changes", Run: runDiffCurve}, true)
	register(Workload{Name: "list-scaling", Doc: "time to list every key against the number of keys", Run: runListCurve}, true)
	register(Workload{Name: "hash", Doc: "MD5, SHA-256 and BLAKE3 throughput on this machine (one core, and every core)", Run: runHash}, true)
}
