package apiconn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/droverhq/drover/api"
)

// maxCharm bounds a downloaded archive.
const maxCharm = 512 << 20

func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxCharm+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(data, &e) == nil && e.Code != "" {
			e.Status = resp.StatusCode
			return nil, &e
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	if len(data) > maxCharm {
		return nil, fmt.Errorf("archive over %d bytes", maxCharm)
	}
	return data, nil
}
