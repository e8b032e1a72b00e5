"""A real local Kubernetes control plane for coscheduler's tests, benchmarks and sandbox.

Built from Go modules (see ``e2e.build``), started as local processes on
127.0.0.1 (see ``e2e.cluster``). Nothing here is faked: a real etcd and a real
kube-apiserver answer, kube-controller-manager runs the controllers, and KWOK
plays the kubelets of fake nodes.
"""
