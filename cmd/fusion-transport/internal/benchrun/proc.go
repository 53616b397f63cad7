package benchrun

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space on every architecture Go runs on.
const clockTick = 10 * time.Millisecond

// cpuTime returns the user plus system CPU time that process pid has used,
// all its threads together.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(raw)
}

// parseStat reads utime and stime (fields 14 and 15) from a /proc/PID/stat
// line. The command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted from the last ')'.
func parseStat(raw []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", raw)
	}
	fields := strings.Fields(string(raw[i+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want more than %d", len(fields), stime)
	}
	var ticks int64
	for _, f := range []string{fields[utime], fields[stime]} {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// memory returns a value of /proc/PID/status in bytes, such as VmRSS (the
// resident set now) or VmHWM (its peak).
func memory(pid int, key string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatus(raw, key)
}

// parseStatus finds "key:   1234 kB" in a /proc/PID/status file.
func parseStatus(raw []byte, key string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != key {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc status %s: unexpected value %q", key, value)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status %s: %w", key, err)
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("/proc status: no %s", key)
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "".
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// loadAverage returns the 1-minute load average of the machine, or 0.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
