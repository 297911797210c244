package apiconn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

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

// saveBody writes a successful answer's body to the file dst; an error
// answer is returned as readBody returns it.
func saveBody(resp *http.Response, dst string) error {
	if resp.StatusCode != http.StatusOK {
		_, err := readBody(resp)
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(resp.Body, maxCharm+1)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
