pragma circom 2.1.0;

// A Poseidon chain sized for a 4096-point domain and wide Pippenger windows.
include "circomlib/circuits/poseidon.circom";

template Chain(n) {
    signal input seed;
    signal input key;
    signal output out;
    component h[n];
    signal acc[n + 1];
    acc[0] <== seed;
    for (var i = 0; i < n; i++) {
        h[i] = Poseidon(2);
        h[i].inputs[0] <== acc[i];
        h[i].inputs[1] <== key;
        acc[i + 1] <== h[i].out;
    }
    out <== acc[n];
}

component main {public [key]} = Chain(6);
