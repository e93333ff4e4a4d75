package kazoo

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Outcome is how one test of the suite ended.
type Outcome string

// The outcomes, as pytest reports them.
const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"  // an assertion or exception in the test
	Errored Outcome = "error"   // in setUp/tearDown (a fixture)
	Skipped Outcome = "skipped" // pytest.skip, or xfail
)

// Result is one test case of a JUnit report.
type Result struct {
	// ID is "test_file.py::Class::test_name" (pytest's node id without the
	// directory).
	ID      string
	Outcome Outcome
	// Message is the first line of the failure or error message.
	Message string
	Seconds float64
}

// Failing says whether the test failed or errored.
func (r Result) Failing() bool { return r.Outcome == Failed || r.Outcome == Errored }

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

type junitCase struct {
	Classname string         `xml:"classname,attr"`
	Name      string         `xml:"name,attr"`
	Time      float64        `xml:"time,attr"`
	Failures  []junitProblem `xml:"failure"`
	Errors    []junitProblem `xml:"error"`
	Skipped   []junitProblem `xml:"skipped"`
}

type junitSuite struct {
	Cases  []junitCase  `xml:"testcase"`
	Suites []junitSuite `xml:"testsuite"`
}

// maxReport bounds the JUnit file read (the suite's is ~100 KiB, more with
// long tracebacks).
const maxReport = 64 << 20

// ParseJUnit reads pytest's --junitxml report (a <testsuites> or a
// <testsuite> root) and returns its test cases sorted by ID. A case with
// both a failure and an error (a failing test whose tearDown also failed)
// is Failed.
func ParseJUnit(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReport+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxReport {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxReport)
	}
	var root struct {
		XMLName xml.Name
		junitSuite
	}
	if err := xml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if n := root.XMLName.Local; n != "testsuites" && n != "testsuite" {
		return nil, fmt.Errorf("%s: root element <%s>, want <testsuites> or <testsuite>", path, n)
	}
	var out []Result
	var walk func(s *junitSuite)
	walk = func(s *junitSuite) {
		for _, c := range s.Cases {
			out = append(out, c.result())
		}
		for i := range s.Suites {
			walk(&s.Suites[i])
		}
	}
	walk(&root.junitSuite)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (c junitCase) result() Result {
	r := Result{ID: CaseID(c.Classname, c.Name), Outcome: Passed, Seconds: c.Time}
	switch {
	case len(c.Failures) > 0:
		r.Outcome, r.Message = Failed, firstLine(c.Failures[0])
	case len(c.Errors) > 0:
		r.Outcome, r.Message = Errored, firstLine(c.Errors[0])
	case len(c.Skipped) > 0:
		r.Outcome, r.Message = Skipped, firstLine(c.Skipped[0])
	}
	return r
}

func firstLine(p junitProblem) string {
	m := strings.TrimSpace(p.Message)
	if m == "" {
		m = strings.TrimSpace(p.Text)
	}
	m, _, _ = strings.Cut(m, "\n")
	if len(m) > 300 {
		m = m[:300] + "…"
	}
	return m
}

// CaseID turns pytest's JUnit classname ("kazoo.tests.test_lock.TestSemaphore",
// or "kazoo.tests.test_paths" for a module-level function) and name into
// "test_lock.py::TestSemaphore::test_name".
func CaseID(classname, name string) string {
	parts := strings.Split(classname, ".")
	// The module is the last part named test_*: the classes follow it.
	mod := -1
	for i, p := range parts {
		if strings.HasPrefix(p, "test_") {
			mod = i
		}
	}
	if mod < 0 {
		return classname + "::" + name
	}
	id := parts[mod] + ".py"
	for _, p := range parts[mod+1:] {
		id += "::" + p
	}
	return id + "::" + name
}

// Counts sums results by outcome.
type Counts struct {
	Passed, Failed, Errors, Skipped int
}

// Count sums rs by outcome.
func Count(rs []Result) Counts {
	var c Counts
	for _, r := range rs {
		switch r.Outcome {
		case Passed:
			c.Passed++
		case Failed:
			c.Failed++
		case Errored:
			c.Errors++
		case Skipped:
			c.Skipped++
		}
	}
	return c
}

// String is pytest's summary ("470 passed, 3 failed, 1 skipped"), always
// with passed and failed.
func (c Counts) String() string {
	s := fmt.Sprintf("%d passed, %d failed", c.Passed, c.Failed)
	if c.Errors > 0 {
		s += fmt.Sprintf(", %d errors", c.Errors)
	}
	if c.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", c.Skipped)
	}
	return s
}
