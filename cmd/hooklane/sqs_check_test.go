package main

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// TestServeRefusesStandardQueue: `hooklane serve` on an SQS queue that is
// not FIFO exits at start with status 1 and says why and what to do.
func TestServeRefusesStandardQueue(t *testing.T) {
	t.Parallel()
	endpoint := cmp.Or(os.Getenv("HOOKLANE_TEST_SQS_ENDPOINT"), "http://127.0.0.1:4566")
	client := sqsClient(endpoint)
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("hooklane-standard-" + faultSuffix())})
	require.NoError(t, err)
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	bin := hooklaneBinary.get(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "HOOKLANE_LISTEN=" + freePort(t),
		"HOOKLANE_DATA_DIR=" + t.TempDir(),
	}
	for k, v := range sqsEnv(endpoint, url) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	output, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "serve must exit: %s", output)
	require.Equal(t, 1, exit.ExitCode(), "%s", output)
	require.Contains(t, string(output), "not an SQS FIFO queue")
	require.Contains(t, string(output), "FifoQueue=true")
	require.NotErrorIs(t, ctx.Err(), context.DeadlineExceeded, "serve exited by itself")
}
