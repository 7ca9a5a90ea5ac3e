package floor

import (
	"fmt"
	"math/rand/v2"
)

// File is file i of the benchmarks' tree (bench/scale.sh and
// bench/walk.sh): its depot path, perDir files to a directory, and its
// content, 64 to 2,048 letters that depend on i alone, so every run and
// both sides of a comparison hold the same tree.
func File(i, perDir int) (string, []byte) {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	data := make([]byte, 64+r.IntN(2048-64+1))
	for j := range data {
		data[j] = 'a' + byte(r.IntN(26))
	}
	return fmt.Sprintf("/b%d/d%05d/f%08d.txt", i/100_000, i/perDir, i), data
}
