pragma circom 2.1.0;

// Hash, bit decomposition and comparison: many 0/1 signals, several public outputs and one public input.
include "circomlib/circuits/poseidon.circom";
include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";

template Mixed() {
    signal input a;
    signal input b;
    signal input c;
    signal input salt;
    signal output hash;
    signal output product;
    signal output less;

    component h = Poseidon(2);
    h.inputs[0] <== a;
    h.inputs[1] <== salt;
    hash <== h.out;

    product <== a * b;

    component bits = Num2Bits(64);
    bits.in <== a;

    component lt = LessThan(64);
    lt.in[0] <== a;
    lt.in[1] <== c;
    less <== lt.out;
}

component main {public [b]} = Mixed();
