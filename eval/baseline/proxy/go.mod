// The OpenWhisk action-runtime proxy of the vanilla Docker baseline (standard library only).
module owwasm/baseline-proxy

go 1.21
