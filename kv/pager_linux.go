package kv

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// canPageOut reports whether the kernel knows MADV_PAGEOUT (Linux 5.4):
// advising an empty range answers EINVAL where it does not.
func canPageOut() bool {
	_, _, e := unix.Syscall(unix.SYS_MADVISE, 0, 0, unix.MADV_PAGEOUT)
	return e == 0
}

// residentFile is the process's resident pages of mapped files in bytes
// (RssFile in /proc/self/status; 0 if unknown).
func residentFile() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusKiB(b, "RssFile:") << 10
}

// statusKiB reads the value in KiB of field (with its colon) from the
// text of /proc/PID/status (0 if absent).
func statusKiB(status []byte, field string) int64 {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte(field))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		return n
	}
	return 0
}

// pageOut asks the kernel to page out every mapping of a file under dir
// (MADV_PAGEOUT) and returns how many it advised. Of a table it pages out
// the blocks only: Badger reads an unencrypted table's index and Bloom
// filter in place, through the mapping, on every lookup, so those pages
// are the hottest it has (tables maps each table's path to where its
// index starts, and keeps what it learns for the next call). A mapping
// unmapped since /proc/self/maps was read answers ENOMEM and is skipped;
// whatever took its place is not harmed, as paging out only ever moves
// pages out of the resident set (without swap, anonymous pages stay).
func pageOut(dir string, tables map[string]int64) (int, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("page out: %w", err)
	}
	defer f.Close()
	seen := make(map[string]bool, len(tables))
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		start, end, path, ok := mappingUnder(sc.Text(), dir)
		if !ok {
			continue
		}
		if strings.HasSuffix(path, ".sst") {
			seen[path] = true
			end = min(end, start+blocksEnd(path, tables))
		}
		if end <= start {
			continue
		}
		_, _, e := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_PAGEOUT)
		if e != 0 && e != unix.ENOMEM {
			return n, fmt.Errorf("page out %x-%x: %w", start, end, e)
		}
		n++
	}
	for p := range tables {
		if !seen[p] {
			delete(tables, p)
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("page out: %w", err)
	}
	return n, nil
}

// blocksEnd is where the blocks of the table at path end and its index
// begins, rounded down to a page, from tables or the table's footer
// (Badger v4's layout: blocks, index, 4-byte index length, checksum,
// 4-byte checksum length, the lengths big-endian). A table it cannot read
// counts as index alone (0), so nothing of it is paged out.
func blocksEnd(path string, tables map[string]int64) uintptr {
	at, ok := tables[path]
	if !ok {
		at = indexStart(path)
		tables[path] = at
	}
	page := int64(os.Getpagesize())
	return uintptr(at / page * page)
}

// indexStart reads where the index of the table at path starts (0 if
// the footer does not parse).
func indexStart(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	var b [4]byte
	pos := fi.Size() - 4
	if pos < 0 {
		return 0
	}
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return 0
	}
	pos -= int64(binary.BigEndian.Uint32(b[:])) + 4 // the checksum and the index length
	if pos < 0 {
		return 0
	}
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return 0
	}
	pos -= int64(binary.BigEndian.Uint32(b[:]))
	return max(pos, 0)
}

// mappingUnder parses a line of /proc/PID/maps ("start-end perms offset
// dev inode path") and reports its range and path when it maps a file
// under dir.
func mappingUnder(line, dir string) (start, end uintptr, path string, ok bool) {
	f := strings.SplitN(line, " ", 6)
	if len(f) < 6 {
		return 0, 0, "", false
	}
	path = strings.TrimLeft(f[5], " ")
	if !strings.HasPrefix(path, dir+"/") {
		return 0, 0, "", false
	}
	a, b, _ := strings.Cut(f[0], "-")
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || y <= x {
		return 0, 0, "", false
	}
	return uintptr(x), uintptr(y), path, true
}
