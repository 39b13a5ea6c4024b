package kafkatest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/graphtide/graphtide/internal/doctest"
)

// TestDocs runs the shell examples of README.md and docs/*.md, a subtest
// per page (TestDocs/README, TestDocs/getting-started ...), as
// docs/doctest.md describes: each page's sh and console blocks as one bash
// script in a directory of its own, its ports free ones, the tour's broker
// (127.0.0.1:19092) this package's shared broker, whose topics and groups
// the page created are deleted after it.
func TestDocs(t *testing.T) {
	addrs := needBroker(t)
	host, portText, err := net.SplitHostPort(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		t.Fatalf("the docs' broker is on 127.0.0.1; the shared broker %s is not on loopback", addrs[0])
	}
	brokerPort, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := doctest.Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	bin := graphtideBinary(t)
	defaults, err := doctest.FlagDefaults(bin)
	if err != nil {
		t.Fatal(err)
	}
	cfg := doctest.Config{
		Root:     root,
		Binary:   bin,
		Defaults: defaults,
		Fixed:    map[int]int{doctest.TourBrokerPort: brokerPort},
		Alloc:    freePortPair,
		// A guard against a page that hangs. make test runs the pages
		// beside its other parts (load 20 on 2 cores), where the tour
		// (README.md), about 15 s alone, passed 30 s.
		Timeout: 90 * time.Second,
	}
	b := docsAdmin(t, addrs)
	t0 := time.Now()
	defer func() { t.Logf("%d pages in %v", len(pages), time.Since(t0).Round(time.Millisecond)) }()
	for _, page := range pages {
		t.Run(doctest.PageName(page), func(t *testing.T) {
			topics, groups := brokerState(t, b)
			t.Cleanup(func() { forgetPage(t, b, topics, groups) })
			res, err := doctest.RunPage(context.Background(), cfg, page, t.TempDir())
			if res != nil {
				t.Logf("%s: %d blocks run, %d skipped, %v (ports %s)", page, res.Blocks, res.Skipped, res.Took.Round(time.Millisecond), res.Ports)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// docsBroker is a client of the shared broker for TestDocs's cleanup.
type docsBroker struct {
	cl  *kgo.Client
	adm *kadm.Client
}

func docsAdmin(t *testing.T, addrs []string) docsBroker {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return docsBroker{cl, kadm.NewClient(cl)}
}

// topics lists the broker's topics (of names, if given) by a metadata
// request of its own: kadm's ListTopics answers from the client's
// metadata cache, which lists topics deleted seconds ago.
func (b docsBroker) topics(ctx context.Context, names ...string) (map[string]bool, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 && !t.IsInternal {
			live[*t.Topic] = true
		}
	}
	return live, nil
}

// brokerState is the broker's topics and consumer groups.
func brokerState(t *testing.T, b docsBroker) (topics, groups map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topics, err := b.topics(ctx)
	if err != nil {
		t.Fatalf("listing the broker's topics: %v", err)
	}
	gl, err := b.adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("listing the broker's groups: %v", err)
	}
	groups = map[string]bool{}
	for _, n := range gl.Groups() {
		groups[n] = true
	}
	return topics, groups
}

// forgetPage deletes the topics and groups that appeared on the broker
// since before (the page's: nothing else runs beside TestDocs), and waits
// until the topics are gone, so that the next page starts from the same
// broker.
func forgetPage(t *testing.T, b docsBroker, topicsBefore, groupsBefore map[string]bool) {
	t.Helper()
	adm := b.adm
	topics, groups := brokerState(t, b)
	var newTopics, newGroups []string
	for n := range topics {
		if !topicsBefore[n] {
			newTopics = append(newTopics, n)
		}
	}
	for n := range groups {
		if !groupsBefore[n] {
			newGroups = append(newGroups, n)
		}
	}
	sort.Strings(newTopics)
	sort.Strings(newGroups)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(newGroups) > 0 {
		// A static member (--group-instance-id) does not leave its group
		// when it stops: it keeps it until its session times out, and a
		// group with members cannot be deleted. The page's processes are
		// stopped: remove their static members.
		described, err := adm.DescribeGroups(ctx, newGroups...)
		if err != nil {
			t.Errorf("describing the page's groups %v: %v", newGroups, err)
		}
		for _, g := range described.Sorted() {
			var ids []string
			for _, m := range g.Members {
				if m.InstanceID != nil {
					ids = append(ids, *m.InstanceID)
				}
			}
			if len(ids) == 0 {
				continue
			}
			lr, err := adm.LeaveGroup(ctx, kadm.LeaveGroup(g.Group).InstanceIDs(ids...))
			if err == nil {
				err = lr.Error()
			}
			if err != nil {
				t.Errorf("removing the static members %v of the page's group %s: %v", ids, g.Group, err)
			}
		}
		res, err := adm.DeleteGroups(ctx, newGroups...)
		if err != nil {
			t.Errorf("deleting the page's groups %v: %v", newGroups, err)
		}
		for _, g := range res.Sorted() {
			if g.Err != nil {
				t.Errorf("deleting the page's group %s: %v", g.Group, g.Err)
			}
		}
	}
	if len(newTopics) == 0 {
		return
	}
	res, err := adm.DeleteTopics(ctx, newTopics...)
	if err != nil {
		t.Errorf("deleting the page's topics %v: %v", newTopics, err)
		return
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			t.Errorf("deleting the page's topic %s: %v", r.Topic, r.Err)
		}
	}
	for {
		left, err := b.topics(ctx, newTopics...)
		if err == nil && len(left) == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Errorf("the page's topics %v are not gone 30 s after their deletion: %v", newTopics, fmt.Sprint(err))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDocsForgetsStaticMembers: a page's group with a static member that
// stopped (it does not leave the group) is deleted after the page all the
// same, as a group of dynamic members is, and a topic created within the
// second before the cleanup is deleted too (kadm's ListTopics, answering
// from the client's metadata cache, did not list it).
func TestDocsForgetsStaticMembers(t *testing.T) {
	addrs := needBroker(t)
	b := docsAdmin(t, addrs)
	adm := b.adm
	topics, groups := brokerState(t, b)
	topic, group := uniq("docs-static"), uniq("docs-static-group")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for _, instance := range []string{"replica-0", ""} {
		opts := []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group + instance)}
		if instance != "" {
			opts = append(opts, kgo.InstanceID(instance))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		// Joined once the group has this member.
		for {
			d, err := adm.DescribeGroups(ctx, group+instance)
			if err == nil && len(d[group+instance].Members) == 1 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the consumer did not join %s: %v", group+instance, err)
			}
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			cl.PollRecords(pctx, 1)
			pcancel()
		}
		cl.Close()
	}
	d, err := adm.DescribeGroups(ctx, group+"replica-0")
	if err != nil || len(d[group+"replica-0"].Members) != 1 {
		t.Fatalf("the static member is expected to stay in its group after Close: %v %+v", err, d)
	}
	forgetPage(t, b, topics, groups)
	// Asked by a client of its own (no metadata cached): the topic and
	// both groups are gone.
	after, afterGroups := brokerState(t, docsAdmin(t, addrs))
	if after[topic] || afterGroups[group+"replica-0"] || afterGroups[group] {
		t.Errorf("after forgetPage: topic %s left %v, groups left: static %v, dynamic %v", topic, after[topic], afterGroups[group+"replica-0"], afterGroups[group])
	}
}
