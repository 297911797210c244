package spoke

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
)

// TestMetricLabelsBounded sends requests with a thousand made-up methods
// and paths and checks that the request metrics keep a bounded number of
// series: labels are known methods and route patterns, never what a
// client sent (issue 26, finding 8).
func TestMetricLabelsBounded(t *testing.T) {
	c := newTestCluster(t, 1)
	cl := c.rawClientFrom("")
	for i := range 1000 {
		path := fmt.Sprintf("/v1/models/m%d/junk%d", i, i)
		if i%2 == 1 {
			path = fmt.Sprintf("/nowhere/%d", i)
		}
		c.do(cl, 0, fmt.Sprintf("FOO%d", i), path, nil)
	}
	resp, err := cl.Get("https://" + c.nodes[0].cfg.Listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	series := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "drover_api_requests_total{") {
			series++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if series > 50 {
		t.Fatalf("1000 requests with made-up methods and paths made %d series of drover_api_requests_total, want at most 50", series)
	}
}
