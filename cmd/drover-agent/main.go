// Command drover-agent is the machine agent. Invoked through a symlink
// named after a hook tool (relation-get, status-set, ...) it is that tool
// instead, talking to the agent over the hook's socket.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/droverhq/drover/agent"
)

// version is set at build time.
var version = "dev"

func main() {
	if agent.IsTool(filepath.Base(os.Args[0])) {
		os.Exit(agent.ToolMain(os.Args[0], os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: drover-agent machine --config FILE | version")
		return 2
	}
	switch args[0] {
	case "version":
		fmt.Println(version)
		return 0
	case "machine":
		fs := flag.NewFlagSet("machine", flag.ContinueOnError)
		conf := fs.String("config", "", "agent.conf path")
		level := fs.String("log-level", "info", "debug, info, warn or error")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if *conf == "" {
			fmt.Fprintln(os.Stderr, "ERROR --config is required")
			return 2
		}
		var lv slog.Level
		if err := lv.UnmarshalText([]byte(*level)); err != nil {
			fmt.Fprintln(os.Stderr, "ERROR bad --log-level:", err)
			return 2
		}
		log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
		if err := runMachine(*conf, log); err != nil {
			log.Error("machine agent failed", "err", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(os.Stderr, "ERROR unknown command %q\n", args[0])
		return 2
	}
}

func runMachine(conf string, log *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := agent.RunMachine(ctx, conf, exe, log); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
