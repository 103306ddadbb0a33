// Package localstack holds the smoke tests of Hooklane's local test stack
// (see README.md): they check that the MongoDB- and SQS-compatible servers
// started by stack.sh answer the way the adapters rely on. It has no code of
// its own.
package localstack
