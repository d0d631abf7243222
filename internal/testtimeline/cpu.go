package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuSample is the machine's processor time so far, from /proc/stat.
type cpuSample struct {
	At    time.Time `json:"at"`
	Busy  float64   `json:"busy"`  // seconds of all processors' time not idle
	Total float64   `json:"total"` // seconds of all processors' time
}

// readCPU reads the "cpu" line of /proc/stat (the sum over processors, in clock
// ticks: user nice system idle iowait irq softirq steal ...); idle and iowait count
// as idle. ok is false where there is no /proc/stat.
func readCPU(path string) (s cpuSample, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return s, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return s, false
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 6 || fields[0] != "cpu" {
		return s, false
	}
	const tick = 100.0 // USER_HZ: /proc/stat's unit on Linux, whatever the kernel's HZ
	for i, f := range fields[1:] {
		if i >= 8 { // guest time is already in user and nice
			break
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return s, false
		}
		s.Total += v / tick
		if i != 3 && i != 4 {
			s.Busy += v / tick
		}
	}
	s.At = time.Now()
	return s, true
}

// sampler reads /proc/stat at an interval until stopped.
type sampler struct {
	quit    chan struct{}
	done    sync.WaitGroup
	samples []cpuSample
}

func startSampler(every time.Duration) *sampler {
	s := &sampler{quit: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if c, ok := readCPU("/proc/stat"); ok {
				s.samples = append(s.samples, c)
			}
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop takes a last sample and returns them all.
func (s *sampler) stop() []cpuSample {
	close(s.quit)
	s.done.Wait()
	if c, ok := readCPU("/proc/stat"); ok {
		s.samples = append(s.samples, c)
	}
	return s.samples
}
