package bench

import (
	"math"
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

// The fit takes a steady growth out: rounds whose cost climbs 150 µs a
// round, the transformed ones 90 µs dearer, give back 90 µs and 150 µs
// exactly, where the medians charge the transformation part of the
// growth.
func TestTransformTrendTakesTheGrowthOut(t *testing.T) {
	t.Parallel()
	var rounds []TransformRound
	for i := range 6 {
		cost := 1000 + 150*float64(i)
		if transformedRound(i) {
			cost += 90
		}
		rd := TransformRound{Transformed: transformedRound(i)}
		rd.Cost.CPUSeconds = cost / 1000
		rounds = append(rounds, rd)
	}
	res := &TransformResult{Rounds: rounds}
	res.summarise()
	require.NotNil(t, res.Trend)
	require.InDelta(t, 90, res.Trend.ExtraCPUMicros, 1e-6)
	require.InDelta(t, 150, res.Trend.GrowthCPUMicros, 1e-6)
	require.InDelta(t, 90.0/(1000+150*2.5), res.Trend.ExtraRatio, 1e-9)
	require.Greater(t, math.Abs(res.ExtraCPUMicros-90), 50.0, "the medians mix the growth in: what the fit corrects")

	require.Nil(t, fitTrend(rounds[:2]), "two rounds cannot tell three figures apart")
	plain := []TransformRound{{}, {}, {}, {}}
	require.Nil(t, fitTrend(plain), "one kind of round only")
}
