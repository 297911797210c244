// Command sourcehash prints the SHA-256 of the dashboard's sources (see
// web/internal/sourcehash): `make web` writes it to web/dist/source.sha256.
//
//	go run ./web/cmd/sourcehash [web-dir]
package main

import (
	"fmt"
	"os"

	"github.com/droverhq/drover/web/internal/sourcehash"
)

func main() {
	dir := "web"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	sum, err := sourcehash.Hash(os.DirFS(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sourcehash:", err)
		os.Exit(1)
	}
	fmt.Println(sum)
}
