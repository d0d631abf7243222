package lab

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
)

// maxProcs is the SWF header line giving the machine's processors.
var maxProcs = regexp.MustCompile(`^;\s*MaxProcs:\s*(\d+)`)

// SWFMaxProcs is the processors a Standard Workload Format log's "; MaxProcs: N"
// header gives (the first such line, in the header or after it), or 0 when it has
// none or N is not a positive whole number that fits. The jobs themselves are
// scheduler.ReadSWF's.
func SWFMaxProcs(data []byte) int64 {
	var procs int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() && procs == 0 {
		if m := maxProcs.FindStringSubmatch(sc.Text()); m != nil {
			procs, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	return procs
}
