// etcd's Go `concurrency.Mutex` (go.etcd.io/etcd/clientv3/concurrency, etcd 3.4), driven through
// the lockbench adapter protocol (docs/CLIENTS.md), as etcd's own example shows it: a
// `concurrency.Session` (a lease kept alive by the client), `concurrency.NewMutex(session, prefix)`,
// `Lock(ctx)`, `Unlock(ctx)`.
//
// One session per lock, with the acquire's TTL (in whole seconds: an etcd lease's unit), so that
// each lock lives as long as its own lease. The session's keep-alive renews it by itself; when the
// keep-alive ends without a release (the lease expired or was revoked), `session.Done()` closes,
// which goes out as a `lost` event. The mutex's `Header().Revision`, the store's revision when
// the lock was granted, grows from one holder to the next: it is the fencing token etcd's
// documentation offers. etcd 3.4's Mutex has no TryLock (3.5 adds it): a one-try acquire is
// `Lock` with a context that ends after ONE_TRY.
//
// Built by scripts/clients.sh from Debian's golang-etcd-server-dev sources (GOPATH mode).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/version"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/grpclog"
)

const protocol = 1

// How long a one-try acquire (wait 0) lets Lock run: a round trip or two on loopback.
const oneTry = 100 * time.Millisecond

var out sync.Mutex

// nowNs is the machine's CLOCK_MONOTONIC in nanoseconds, the clock the protected resource logs
// with.
func nowNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// send writes one message, stamped, as one line (from any goroutine).
func send(message map[string]interface{}) {
	out.Lock()
	defer out.Unlock()
	message["t"] = nowNs()
	line, err := json.Marshal(message)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(line, '\n'))
}

type hello struct {
	Protocol           int      `json:"protocol"`
	Urls               []string `json:"urls"`
	Namespace          string   `json:"namespace"`
	OperationTimeoutMs int64    `json:"operation_timeout_ms"`
	ConnectTimeoutMs   int64    `json:"connect_timeout_ms"`
}

type request struct {
	Op     string      `json:"op"`
	ID     interface{} `json:"id"`
	Key    string      `json:"key"`
	TTLMs  int64       `json:"ttl_ms"`
	WaitMs int64       `json:"wait_ms"`
}

// holding is one granted lock: its own session and its mutex.
type holding struct {
	session  *concurrency.Session
	mutex    *concurrency.Mutex
	released chan struct{}
}

type adapter struct {
	client    *clientv3.Client
	namespace string
	timeout   time.Duration
	locks     map[string]*holding
}

func open(h hello) (*adapter, error) {
	endpoints := make([]string, len(h.Urls))
	for i, u := range h.Urls {
		// `http://host:port` (with or without a path) or a bare `host:port`.
		if parsed, err := url.Parse(u); err == nil && parsed.Host != "" {
			endpoints[i] = parsed.Host
		} else {
			endpoints[i] = u
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: time.Duration(h.ConnectTimeoutMs) * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	timeout := time.Duration(h.OperationTimeoutMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// clientv3.New does not connect; a Get says whether the server answers.
	if _, err := client.Get(ctx, "/"+h.Namespace+"/hello"); err != nil {
		client.Close()
		return nil, fmt.Errorf("etcd at %s: %w", strings.Join(endpoints, ","), err)
	}
	return &adapter{client, h.Namespace, timeout, map[string]*holding{}}, nil
}

func (a *adapter) describe() map[string]interface{} {
	return map[string]interface{}{
		"library":       "etcd-go",
		"version":       version.Version,
		"backend":       "etcd",
		"renewal":       "automatic",
		"fencing":       true,
		"notifies_loss": true,
	}
}

func (a *adapter) acquire(key string, ttlMs, waitMs int64) (map[string]interface{}, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	// The session's lease, granted here so that its granted TTL (the server raises a TTL below
	// its minimum) is known: NewSession(WithLease) is WithTTL's own Grant, made visible.
	seconds := (ttlMs + 999) / 1000
	grant, err := a.client.Grant(ctx, seconds)
	if err != nil {
		return nil, err
	}
	session, err := concurrency.NewSession(a.client, concurrency.WithLease(grant.ID))
	if err != nil {
		return nil, err
	}
	mutex := concurrency.NewMutex(session, fmt.Sprintf("/%s/locks/%s", a.namespace, key))
	wait := time.Duration(waitMs) * time.Millisecond
	if wait <= 0 {
		wait = oneTry
	}
	waitCtx, waitCancel := context.WithTimeout(context.Background(), wait)
	defer waitCancel()
	if err := mutex.Lock(waitCtx); err != nil {
		session.Close()
		if waitCtx.Err() != nil {
			// Not granted within the wait: etcd's "no" (Lock removed its own waiter key).
			return map[string]interface{}{"held": false}, nil
		}
		return nil, err
	}
	h := &holding{session, mutex, make(chan struct{})}
	a.locks[key] = h
	go func() {
		select {
		case <-session.Done():
			send(map[string]interface{}{"event": "lost", "key": key, "why": "session.Done(): the lease's keep-alive ended"})
		case <-h.released:
		}
	}()
	return map[string]interface{}{
		"held":          true,
		"token":         mutex.Key(),
		"fencing_token": mutex.Header().Revision,
		"validity_ms":   grant.TTL * 1000,
	}, nil
}

func (a *adapter) held(key string) (map[string]interface{}, error) {
	h, ok := a.locks[key]
	if !ok {
		return map[string]interface{}{"held": false}, nil
	}
	select {
	case <-h.session.Done():
		return map[string]interface{}{"held": false}, nil
	default:
	}
	// The mutex's own ownership check, in a transaction as its documentation says.
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	resp, err := a.client.Txn(ctx).If(h.mutex.IsOwner()).Commit()
	if err != nil {
		return nil, err
	}
	return map[string]interface{}{"held": resp.Succeeded}, nil
}

func (a *adapter) release(key string) (map[string]interface{}, error) {
	h, ok := a.locks[key]
	if !ok {
		return nil, fmt.Errorf("release of %s, which this adapter does not hold", key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	// Unlock deletes this session's own waiter key and answers nil whether or not the key was
	// still there (an expired lease took it with it): etcd's Mutex never says "not yours".
	if err := h.mutex.Unlock(ctx); err != nil {
		return nil, err
	}
	close(h.released)
	h.session.Close()
	delete(a.locks, key)
	return map[string]interface{}{"released": true}, nil
}

func (a *adapter) close() {
	for _, h := range a.locks {
		h.session.Close()
	}
	a.client.Close()
}

func said(err error) string {
	return fmt.Sprintf("%T: %v", err, err)
}

func main() {
	// gRPC's warnings and errors go to stderr, never stdout; its chatter nowhere.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, os.Stderr, os.Stderr))
	var a *adapter
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if serveOne(&a, line) {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if a != nil {
		a.close()
	}
}

// serveOne answers one request line; true after `bye`.
func serveOne(a **adapter, line []byte) bool {
	var r request
	if err := json.Unmarshal(line, &r); err != nil {
		send(map[string]interface{}{"ok": false, "error": "not JSON: " + err.Error()})
		return false
	}
	var reply map[string]interface{}
	var err error
	switch {
	case r.Op == "hello":
		var h hello
		if err = json.Unmarshal(line, &h); err == nil {
			if h.Protocol != protocol {
				err = fmt.Errorf("protocol %d; this adapter speaks %d", h.Protocol, protocol)
			} else if *a, err = open(h); err == nil {
				reply = (*a).describe()
				reply["protocol"] = protocol
			}
		}
	case *a == nil:
		err = fmt.Errorf("%s before hello", r.Op)
	case r.Op == "acquire":
		reply, err = (*a).acquire(r.Key, r.TTLMs, r.WaitMs)
	case r.Op == "renew" || r.Op == "held":
		// The session renews by itself: a renewal is answered with the mutex's own view.
		reply, err = (*a).held(r.Key)
	case r.Op == "release":
		reply, err = (*a).release(r.Key)
	case r.Op == "bye":
		send(map[string]interface{}{"id": r.ID, "ok": true})
		return true
	default:
		err = fmt.Errorf("unknown op %s", r.Op)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		send(map[string]interface{}{"id": r.ID, "ok": false, "error": said(err)})
		return false
	}
	reply["id"] = r.ID
	reply["ok"] = true
	send(reply)
	return false
}
