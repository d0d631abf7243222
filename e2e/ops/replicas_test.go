package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// replica is one `clearhouse serve` process of the replica test.
type replica struct {
	addr string
	cmd  *exec.Cmd
	done <-chan struct{} // closed when the process has exited
	log  *syncBuffer
}

// syncBuffer is a bytes.Buffer safe to write from several goroutines (a process's
// output).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ticks counts the market job's runs this process logged.
func (s *syncBuffer) ticks() int { return strings.Count(s.String(), `msg="market tick"`) }

// replicaCluster is three servers on one PostgreSQL database.
type replicaCluster struct {
	t      *testing.T
	bin    string
	dsn    string
	db     *store.DB
	mu     sync.Mutex
	nodes  []*replica
	tokens []string
	placed atomic.Int64 // orders the servers confirmed since the phase's traffic started
}

// start runs `clearhouse serve` for node i on its address.
func (c *replicaCluster) start(i int) {
	c.t.Helper()
	exited, exit := context.WithCancel(context.Background())
	r := &replica{addr: c.nodes[i].addr, done: exited.Done(), log: &syncBuffer{}}
	r.cmd = exec.Command(c.bin, "serve", "--addr", r.addr, "--db", c.dsn, "--migrate=false",
		"--tick", "1s", "--auction-every", "1m", "--auction-window", "1m", "--preview-every", "5s")
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); exit() }()
	c.mu.Lock()
	c.nodes[i] = r
	c.mu.Unlock()
}

// ready waits until node i answers /healthz.
func (c *replicaCluster) ready(i int) {
	c.t.Helper()
	r := c.node(i)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + r.addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-r.done:
			c.t.Fatalf("replica %d exited: %s", i, r.log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.t.Fatalf("replica %d did not answer within a minute: %s", i, r.log.String())
}

func (c *replicaCluster) node(i int) *replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// stop ends node i with sig and waits for it.
func (c *replicaCluster) stop(i int, sig syscall.Signal) {
	r := c.node(i)
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		_ = r.cmd.Process.Kill()
		<-r.done
		c.t.Errorf("replica %d did not stop within a minute of %v", i, sig)
	}
}

// orderTraffic places bids through the servers in turn until stop closes, and
// returns the ids of the orders the servers confirmed (201) and how many it
// tried.
func (c *replicaCluster) orderTraffic(stop <-chan struct{}) (confirmed *[]int64, tried *int, wait func()) {
	var ids []int64
	n := 0
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	c.placed.Store(0)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			r := c.node(i % len(c.nodes))
			limit := apiv1.MoneyOf(fmt.Sprint(20 + i%30))
			body, _ := json.Marshal(apiv1.NewOrder{Bundles: []map[string]int64{{"us-east/cpu": int64(1 + i%3)}, {"eu-west/cpu": int64(1 + i%3)}}, Limit: &limit})
			req, _ := http.NewRequest(http.MethodPost, "http://"+r.addr+"/api/v1/orders", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+c.tokens[i%len(c.tokens)])
			req.Header.Set("Content-Type", "application/json")
			n++
			resp, err := client.Do(req)
			if err != nil {
				continue // a server stopping or restarting: the order may or may not exist
			}
			var out apiv1.PlacedOrder
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated && out.ID > 0 {
				ids = append(ids, out.ID)
				c.placed.Add(1)
			}
		}
	})
	return &ids, &n, wg.Wait
}

// check asserts what must hold after each phase: every confirmed order is in the
// database, no auction has more than one binding run, and `clearhouse verify`
// is clean. It returns how many auctions have been settled.
func (c *replicaCluster) check(phase string, confirmed []int64) int64 {
	c.t.Helper()
	var found int64
	for part := range chunk(confirmed, 500) {
		var n int64
		if err := c.db.Read.Table("orders").Where("id IN ?", part).Count(&n).Error; err != nil {
			c.t.Fatal(err)
		}
		found += n
	}
	if found != int64(len(confirmed)) {
		c.t.Errorf("%s: %d of %d confirmed orders are in the database", phase, found, len(confirmed))
	}
	var twice []int64
	c.db.Read.Raw("SELECT auction_id FROM auction_runs WHERE binding GROUP BY auction_id HAVING COUNT(*) > 1").Scan(&twice)
	if len(twice) > 0 {
		c.t.Errorf("%s: auctions closed twice: %v", phase, twice)
	}
	out, err := exec.Command(c.bin, "verify", "--db", c.dsn).CombinedOutput()
	if err != nil {
		c.t.Errorf("%s: clearhouse verify: %v\n%s", phase, err, out)
	}
	var settled int64
	c.db.Read.Table("auctions").Where("status = ?", exchange.AuctionSettled).Count(&settled)
	return settled
}

func chunk(ids []int64, n int) func(func([]int64) bool) {
	return func(yield func([]int64) bool) {
		for i := 0; i < len(ids); i += n {
			if !yield(ids[i:min(i+n, len(ids))]) {
				return
			}
		}
	}
}

// openNow waits until an auction is open, bringing the next one's opening forward
// to now instead of waiting for the cadence's minute (the replicas' job opens it at
// its next tick), so that the phase's orders have an auction to go to.
func (c *replicaCluster) openNow() {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var open int64
		c.db.Read.Table("auctions").Where("status = ?", exchange.AuctionOpen).Count(&open)
		if open > 0 {
			return
		}
		c.db.Write.Exec("UPDATE auctions SET opens_at = ? WHERE status = ? AND opens_at > ?", time.Now(), exchange.AuctionScheduled, time.Now())
	}
	c.t.Fatal("no auction open within a minute")
}

// settleSoon is how long the last auction of a phase stays open once waitSettled
// brings its close forward: the phase's order traffic goes on meanwhile.
const settleSoon = 5 * time.Second

// phaseOrders is how many orders the servers confirm in a phase before waitSettled
// brings its auction's close forward, so that each phase's check has traffic to
// check (the cadence's minute gave 75 to 200 a phase).
const phaseOrders = 40

// waitSettled waits until more than n auctions are settled, up to limit. Once the
// phase's traffic has phaseOrders confirmed, it brings the next auction's window
// forward (open now, closing settleSoon from now) instead of waiting for the
// cadence's minute: the replicas' job still opens, closes and settles it, and
// schedules the next.
func (c *replicaCluster) waitSettled(n int64, limit time.Duration) int64 {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		var settled int64
		c.db.Read.Table("auctions").Where("status = ?", exchange.AuctionSettled).Count(&settled)
		if settled > n {
			return settled
		}
		if now := time.Now(); c.placed.Load() >= phaseOrders {
			c.db.Write.Exec("UPDATE auctions SET opens_at = LEAST(opens_at, ?), closes_at = ? WHERE status IN ? AND closes_at > ?",
				now, now.Add(settleSoon), []exchange.AuctionStatus{exchange.AuctionScheduled, exchange.AuctionOpen}, now.Add(settleSoon))
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.t.Fatalf("no auction settled within %s (still %d)", limit, n)
	return n
}

// seedReplicaMarket adds two clusters' cpu pools and three teams with budgets,
// each with a member whose API token is returned.
func seedReplicaMarket(t *testing.T, db *store.DB) []string {
	t.Helper()
	ctx := context.Background()
	l := ledger.New(db, time.Now)
	m := exchange.NewMarket(db, l, time.Now)
	id := identity.NewIdentity(db, time.Now, bcrypt.MinCost)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	for _, cl := range []string{"us-east", "eu-west"} {
		_, err := m.AddCluster(ctx, exchange.Cluster{ID: cl})
		must(err)
		_, err = m.AddPool(ctx, exchange.PoolSpec{ClusterID: cl, Resource: "cpu", Unit: "core", Capacity: 1000,
			UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"})
		must(err)
	}
	var tokens []string
	for _, team := range []string{"search", "ads", "maps"} {
		_, err := m.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 1e6 * ledger.Dollar})
		must(err)
		u, err := id.AddUser(ctx, identity.NewUser{Email: "member@" + team + ".io", Role: identity.RoleMember, TeamID: team})
		must(err)
		tok, _, err := id.IssueToken(ctx, u.ID, "replica-test")
		must(err)
		tokens = append(tokens, tok)
	}
	return tokens
}

// freeAddrs returns n loopback addresses nothing listens on.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Addr().String())
		l.Close()
	}
	return out
}

// Three real `clearhouse serve` processes share one PostgreSQL database under
// order traffic: started at once; the one that last ran the market's job killed
// with SIGKILL (another runs it within a minute); then each restarted in turn.
// After each phase every order a server confirmed is in the database, no auction
// has two binding runs and `clearhouse verify` is clean; auctions keep settling.
// Each phase brings the next auction's opening forward, and its close once phaseOrders
// orders are confirmed (openNow, waitSettled), instead of waiting for the cadence's
// minute, the shortest it allows.
func TestThreeReplicasOnPostgres(t *testing.T) {
	base := storetest.PostgresURL(t)
	if base == "" {
		t.Skip(storetest.PostgresEnv + " is not set: the replica test needs a PostgreSQL server")
	}
	if testing.Short() {
		t.Skip("the replica test runs three servers for about a minute")
	}
	ctx := context.Background()
	bin := e2etest.Binary(t)
	admin, err := store.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("replicas_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	if err := admin.Write.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Write.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		admin.Close()
	})
	u, _ := url.Parse(base)
	u.Path = "/" + name
	dsn := u.String()
	if out, err := exec.Command(bin, "migrate", "--db", dsn).CombinedOutput(); err != nil {
		t.Fatalf("clearhouse migrate: %v\n%s", err, out)
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := &replicaCluster{t: t, bin: bin, dsn: dsn, db: db, tokens: seedReplicaMarket(t, db)}
	for _, addr := range freeAddrs(t, 3) {
		c.nodes = append(c.nodes, &replica{addr: addr})
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			if r := c.node(i); r.cmd != nil {
				select {
				case <-r.done:
				default:
					c.stop(i, syscall.SIGTERM)
				}
			}
		}
	})

	// Simultaneous start.
	for i := range c.nodes {
		c.start(i)
	}
	for i := range c.nodes {
		c.ready(i)
	}
	c.openNow()
	traffic, stop := context.WithCancel(ctx)
	confirmed, tried, wait := c.orderTraffic(traffic.Done())
	c.waitSettled(0, 3*time.Minute)
	stop()
	wait()
	settled := c.check("after a simultaneous start", *confirmed)
	t.Logf("simultaneous start: %d orders tried, %d confirmed; %d auctions settled", *tried, len(*confirmed), settled)
	all := append([]int64(nil), *confirmed...)

	// Kill the replica that last ran the market's job.
	c.openNow()
	traffic, stop = context.WithCancel(ctx)
	confirmed, tried, wait = c.orderTraffic(traffic.Done())
	latest, before := -1, make([]int, len(c.nodes))
	for i := range c.nodes {
		before[i] = c.node(i).log.ticks()
	}
	deadline := time.Now().Add(time.Minute)
	for latest < 0 && time.Now().Before(deadline) { // the next replica to log a run of the job
		time.Sleep(100 * time.Millisecond)
		for i := range c.nodes {
			if c.node(i).log.ticks() > before[i] {
				latest = i
				break
			}
		}
	}
	if latest < 0 {
		t.Fatal("no replica logged a run of the market's job within a minute")
	}
	c.stop(latest, syscall.SIGKILL)
	killed := time.Now()
	for i := range c.nodes {
		before[i] = c.node(i).log.ticks()
	}
	takeover := time.Duration(-1)
	for time.Since(killed) < 2*time.Minute && takeover < 0 {
		time.Sleep(100 * time.Millisecond)
		for i := range c.nodes {
			if i != latest && c.node(i).log.ticks() > before[i] {
				takeover = time.Since(killed)
			}
		}
	}
	if takeover < 0 || takeover > time.Minute {
		t.Fatalf("after replica %d was killed no other ran the market's job within a minute (%v)", latest, takeover)
	}
	c.waitSettled(settled, 3*time.Minute)
	stop()
	wait()
	settled = c.check("after the kill", append(all, *confirmed...))
	t.Logf("kill: replica %d killed; replica took the job over after %v; %d orders tried, %d confirmed; %d auctions settled",
		latest, takeover.Round(time.Millisecond), *tried, len(*confirmed), settled)
	all = append(all, *confirmed...)
	c.start(latest)
	c.ready(latest)

	// Rolling restart.
	c.openNow()
	traffic, stop = context.WithCancel(ctx)
	confirmed, tried, wait = c.orderTraffic(traffic.Done())
	for i := range c.nodes {
		c.stop(i, syscall.SIGTERM)
		c.start(i)
		c.ready(i)
	}
	c.waitSettled(settled, 3*time.Minute)
	stop()
	wait()
	settled = c.check("after a rolling restart", append(all, *confirmed...))
	all = append(all, *confirmed...)
	t.Logf("rolling restart: %d orders tried, %d confirmed; %d auctions settled; %d orders confirmed in all", *tried, len(*confirmed), settled, len(all))
	if len(all) == 0 {
		t.Fatal("no order was confirmed: the traffic tested nothing")
	}
}
