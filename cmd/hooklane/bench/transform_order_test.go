package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Each load runs as many rounds as the other, and over every four rounds
// neither sits later on average: a cost that grows round by round charges
// both alike.
func TestTransformRoundsAlternateByPairs(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 6, 8, 12} {
		var plain, js, plainPos, jsPos int
		for i := range n {
			if transformedRound(i) {
				js++
				jsPos += i
			} else {
				plain++
				plainPos += i
			}
		}
		require.Equal(t, plain, js, "%d rounds", n)
		if n%4 == 0 {
			require.Equal(t, plainPos, jsPos, "%d rounds: the mean position differs", n)
		}
	}
}
