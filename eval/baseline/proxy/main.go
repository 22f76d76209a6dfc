// main.go: entry point of the baseline's action-runtime proxy, the process an action
// container runs (ENTRYPOINT ["/proxy"]). It serves OpenWhisk's action-runtime protocol on
// port 8080 (env PROXY_PORT) for the native executable in /action (env ACTION_DIR); see
// proxy.go for the protocol and ../README.md for the baseline.
//
// It prints nothing of its own on stdout or stderr: in a Docker action container those
// streams are the activations' logs, read up to the sentinel line after each activation.

package main

import (
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	port := envOr("PROXY_PORT", "8080")
	proxy := NewProxy(envOr("ACTION_DIR", "/action"), os.Stdout, os.Stderr, os.Environ())
	server := &http.Server{
		Addr:              net.JoinHostPort("", port),
		Handler:           proxy,
		ReadHeaderTimeout: 30 * time.Second,
		// No write timeout: an activation may run for OpenWhisk's maximum of 5 minutes.
	}

	// As PID 1 in a container, signals without a handler are ignored by the kernel, so
	// `docker stop` would wait for its SIGKILL; exit at once instead.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		os.Exit(0)
	}()

	if err := server.ListenAndServe(); err != nil {
		_, _ = os.Stderr.WriteString("proxy: " + err.Error() + "\n")
		os.Exit(1)
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
