// Command ceiling binds pending pods to nodes round-robin, with no checks at all.
//
// It is the benchmark's upper bound: whatever rate it reaches is what the API server
// (and the client limits it is given) allow on this machine. It watches the pods whose
// spec.schedulerName is its own and that have no node, and binds each to the next node
// of the list in turn. No fit, no capacity, no gangs.
//
// With --create FILE it binds nothing: it creates the pods of FILE (one Pod manifest in
// JSON a line, its namespace set) with --workers requests in flight, in protobuf, and
// exits. The bench makes its big backlogs so (50,000 pods at 5,000 nodes): cheaper for
// the API server and for the machine than the same requests from Python.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	schedulerName := flag.String("scheduler-name", "ceiling", "spec.schedulerName of the pods to bind")
	qps := flag.Float64("qps", 50, "client QPS")
	burst := flag.Int("burst", 100, "client burst")
	workers := flag.Int("workers", 64, "bindings (or creations) in flight")
	create := flag.String("create", "", "create the pods of this file (JSON lines) and exit")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(1)
	}
	config.QPS = float32(*qps)
	config.Burst = *burst
	config.UserAgent = "ceiling-binder"
	// Protobuf, as kube-scheduler asks for: cheaper for the API server to encode than JSON.
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if *create != "" {
		if err := createPods(ctx, client, *create, *workers); err != nil {
			fmt.Fprintln(os.Stderr, "create:", err)
			os.Exit(1)
		}
		return
	}

	var (
		nodesMu sync.RWMutex
		nodes   []string
		next    atomic.Uint64
		bound   atomic.Int64
	)
	nodeFactory := informers.NewSharedInformerFactory(client, 0)
	nodeInformer := nodeFactory.Core().V1().Nodes().Informer()
	refreshNodes := func() {
		names := []string{}
		for _, object := range nodeInformer.GetStore().List() {
			node := object.(*corev1.Node)
			if !node.Spec.Unschedulable && node.DeletionTimestamp == nil {
				names = append(names, node.Name)
			}
		}
		sort.Strings(names)
		nodesMu.Lock()
		nodes = names
		nodesMu.Unlock()
	}
	_, _ = nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { refreshNodes() },
		DeleteFunc: func(any) { refreshNodes() },
	})

	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	selector := fields.AndSelectors(
		fields.OneTermEqualSelector("spec.schedulerName", *schedulerName),
		fields.OneTermEqualSelector("spec.nodeName", ""),
	).String()
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(options *metav1.ListOptions) { options.FieldSelector = selector }))
	podInformer := podFactory.Core().V1().Pods().Informer()
	enqueue := func(object any) {
		if pod, ok := object.(*corev1.Pod); ok && pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
			queue.Add(pod.Namespace + "/" + pod.Name)
		}
	}
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue})

	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.HasSynced, podInformer.HasSynced) {
		fmt.Fprintln(os.Stderr, "caches did not sync")
		os.Exit(1)
	}
	refreshNodes()
	fmt.Println("ready")

	bind := func(key string) error {
		namespace, name, _ := cache.SplitMetaNamespaceKey(key)
		nodesMu.RLock()
		count := len(nodes)
		var node string
		if count > 0 {
			node = nodes[next.Add(1)%uint64(count)]
		}
		nodesMu.RUnlock()
		if node == "" {
			return fmt.Errorf("no nodes")
		}
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}
		err := client.CoreV1().Pods(namespace).Bind(ctx, binding, metav1.CreateOptions{})
		if err == nil {
			bound.Add(1)
			return nil
		}
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or bound already
		}
		return err
	}

	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				if err := bind(key); err != nil && ctx.Err() == nil {
					queue.AddRateLimited(key)
				} else {
					queue.Forget(key)
				}
				queue.Done(key)
			}
		}()
	}
	ticker := time.NewTicker(10 * time.Second)
	defer ticker.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-ticker.C:
			fmt.Printf("bound %d\n", bound.Load())
		}
	}
	queue.ShutDown()
	wg.Wait()
	fmt.Printf("bound %d\n", bound.Load())
}

// createPods creates every pod of path (a Pod manifest in JSON a line) with workers
// requests in flight; the first error stops it.
func createPods(ctx context.Context, client kubernetes.Interface, path string, workers int) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pods := make(chan *corev1.Pod, workers)
	var (
		wg      sync.WaitGroup
		created atomic.Int64
	)
	started := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pod := range pods {
				_, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					cancel(fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
					continue
				}
				created.Add(1)
			}
		}()
	}
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	line := 0
read:
	for scanner.Scan() {
		line++
		pod := &corev1.Pod{}
		if err := json.Unmarshal(scanner.Bytes(), pod); err != nil {
			cancel(fmt.Errorf("line %d: %w", line, err))
			break
		}
		select {
		case pods <- pod:
		case <-ctx.Done():
			break read
		}
	}
	close(pods)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	seconds := time.Since(started).Seconds()
	fmt.Printf("created %d in %.1f s (%.0f a second)\n", created.Load(), seconds,
		float64(created.Load())/seconds)
	return nil
}
