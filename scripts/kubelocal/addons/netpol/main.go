// kube-network-policies (sigs.k8s.io/kube-network-policies) run on the local cluster's host
// as a daemon: the controller that enforces NetworkPolicies, which the bridge CNI plugin
// does not. Its own command takes the in-cluster configuration only; this one takes a
// kubeconfig, the node's name and the NFQUEUE number, and removes its nftables table when
// stopped by SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig the controller reads the API with")
	node := flag.String("node", "", "the node whose pods' traffic is judged")
	queue := flag.Int("nfqueue-id", 100, "the NFQUEUE packets are judged on")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("reading %s: %v", *kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatalf("the API client: %v", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(), nil, nil, nil, nil,
		// NRI stays on: containerd 1.6 serves none, so the plugin only logs that it cannot
		// connect; v0.8.0 with NRI off dereferences the absent plugin for every packet to or
		// from an address that is no pod's (and panics).
		networkpolicy.Config{QueueID: *queue, NodeName: *node, NetfilterBug1766Fix: true})
	if err != nil {
		klog.Fatalf("the network policy controller: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := controller.Run(ctx); err != nil {
			klog.Errorf("the network policy controller stopped: %v", err)
			os.Exit(1)
		}
	}()
	factory.Start(ctx.Done())
	<-ctx.Done()
	select { // Run removes the nftables table as it returns
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
