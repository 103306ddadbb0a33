package mongostore

import (
	"fmt"

	"github.com/hooklane/hooklane/destination/endpoint"
	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/subscription"
)

// authDoc is an endpoint.Auth as stored; its secrets as the store's box
// made them (sealed, or plain without a key).
type authDoc struct {
	Type         string   `bson:"type"`
	Token        string   `bson:"token,omitempty"`
	Username     string   `bson:"username,omitempty"`
	Password     string   `bson:"password,omitempty"`
	TokenURL     string   `bson:"tokenUrl,omitempty"`
	ClientID     string   `bson:"clientId,omitempty"`
	ClientSecret string   `bson:"clientSecret,omitempty"`
	Scopes       []string `bson:"scopes,omitempty"`
	Audience     string   `bson:"audience,omitempty"`
}

// tlsDoc is an endpoint.TLS as stored.
type tlsDoc struct {
	ClientCertificate string `bson:"clientCertificate,omitempty"`
	ClientKey         string `bson:"clientKey,omitempty"`
	CACertificate     string `bson:"caCertificate,omitempty"`
}

func toAuthDoc(a *endpoint.Auth) *authDoc {
	if a == nil {
		return nil
	}
	return &authDoc{
		Type: string(a.Type), Token: a.Token, Username: a.Username, Password: a.Password, TokenURL: a.TokenURL,
		ClientID: a.ClientID, ClientSecret: a.ClientSecret, Scopes: a.Scopes, Audience: a.Audience,
	}
}

func (d *authDoc) asDomain() *endpoint.Auth {
	if d == nil {
		return nil
	}
	return &endpoint.Auth{
		Type: endpoint.AuthType(d.Type), Token: d.Token, Username: d.Username, Password: d.Password, TokenURL: d.TokenURL,
		ClientID: d.ClientID, ClientSecret: d.ClientSecret, Scopes: d.Scopes, Audience: d.Audience,
	}
}

func toTLSDoc(t *endpoint.TLS) *tlsDoc {
	if t == nil {
		return nil
	}
	return &tlsDoc{ClientCertificate: t.ClientCertificate, ClientKey: t.ClientKey, CACertificate: t.CACertificate}
}

func (d *tlsDoc) asDomain() *endpoint.TLS {
	if d == nil {
		return nil
	}
	return &endpoint.TLS{ClientCertificate: d.ClientCertificate, ClientKey: d.ClientKey, CACertificate: d.CACertificate}
}

// subscriptionDoc returns the stored form of sub, its secrets sealed by
// the store's box.
func (s *Store) subscriptionDoc(sub *subscription.Subscription) (*subscriptionDoc, error) {
	sealed, err := sub.MapSecrets(s.box.Seal)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return toSubscriptionDoc(sealed), nil
}

// subscription returns the subscription d stores, its secrets opened by
// the store's box.
func (s *Store) subscription(d *subscriptionDoc) (*subscription.Subscription, error) {
	sub, err := d.asDomain().MapSecrets(s.box.Open)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return sub, nil
}

// jobDoc returns the stored form of j, its secrets sealed by the store's
// box.
func (s *Store) jobDoc(j *dispatch.Job) (*jobDoc, error) {
	sealed, err := j.MapSecrets(s.box.Seal)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return toJobDoc(sealed), nil
}

// job returns the job d stores, its secrets opened by the store's box.
func (s *Store) job(d *jobDoc) (*dispatch.Job, error) {
	j, err := d.asDomain().MapSecrets(s.box.Open)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return j, nil
}

// jobsOf returns the jobs docs store, their secrets opened.
func (s *Store) jobsOf(docs []jobDoc) ([]*dispatch.Job, error) {
	out := make([]*dispatch.Job, len(docs))
	for i := range docs {
		j, err := s.job(&docs[i])
		if err != nil {
			return nil, err
		}
		out[i] = j
	}
	return out, nil
}
