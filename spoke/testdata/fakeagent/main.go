// Command fakeagent stands in for drover-agent in the provisioner's tests:
// `fakeagent machine --config <agent.conf>` connects to the agent stream of
// the first controller address that answers, with the conf's credentials,
// and stays connected (reconnecting over the addresses) until killed.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

func main() {
	if len(os.Args) != 4 || os.Args[1] != "machine" || os.Args[2] != "--config" {
		fmt.Fprintln(os.Stderr, "usage: fakeagent machine --config FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var cfg api.AgentConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(cfg.CACert))
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 5 * time.Second}
	req, _ := http.NewRequest("GET", "https://x", nil)
	req.SetBasicAuth(cfg.Tag, cfg.Secret)
	for i := 0; ; i++ {
		addr := cfg.ControllerAddresses[i%len(cfg.ControllerAddresses)]
		ws, _, err := d.Dial("wss://"+addr+"/v1/agent/stream", http.Header{"Authorization": req.Header["Authorization"]})
		if err != nil {
			fmt.Println("dial:", err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				break
			}
		}
		ws.Close()
	}
}
