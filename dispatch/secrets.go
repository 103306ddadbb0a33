package dispatch

import "fmt"

// MapSecrets returns a copy of j whose secrets — a TASK job's signing
// Secret, its auth secrets and its TLS client key — are f of the
// originals (the store adapters seal and open them with it). A job that
// holds no secret, as every EVENT job, is returned itself, f not called.
// j is never changed; f's first error is returned.
func (j *Job) MapSecrets(f func(string) (string, error)) (*Job, error) {
	if j.Secret == "" && j.Auth == nil && (j.TLS == nil || j.TLS.ClientKey == "") {
		return j, nil
	}
	c := *j
	if c.Secret != "" {
		v, err := f(c.Secret)
		if err != nil {
			return nil, fmt.Errorf("secret of job %s: %w", j.ID, err)
		}
		c.Secret = v
	}
	var err error
	if c.Auth, err = j.Auth.MapSecrets(f); err != nil {
		return nil, fmt.Errorf("auth of job %s: %w", j.ID, err)
	}
	if c.TLS, err = j.TLS.MapSecrets(f); err != nil {
		return nil, fmt.Errorf("tls of job %s: %w", j.ID, err)
	}
	return &c, nil
}
