pragma circom 2.1.0;

// No public signals at all: exercises nPublic = 0.
template Private() {
    signal input x;
    signal input y;
    signal z;
    signal w;
    z <== x * y;
    w <== z * z + x;
}

component main = Private();
