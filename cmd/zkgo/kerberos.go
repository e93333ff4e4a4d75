package main

import (
	"fmt"
	"log/slog"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/krb"
	"github.com/zkgo/zkgo/server"
)

// serverKerberos loads the server's Kerberos credentials for SASL GSSAPI
// on the client port from the Krb5LoginModule entry of the JAAS server
// section, as ZooKeeper's ServerCnxnFactory.configureSaslLogin logs in
// with it; like ZooKeeper, the server does not start when that fails.
// Unlike Java with isInitiator=true, zkgo does not ask the KDC for a
// ticket at start: an acceptor needs only its keytab.
func serverKerberos(cfg *config.Config, opts *server.Options, log *slog.Logger) error {
	kc := cfg.Kerberos
	if kc.ServerEntry == nil {
		return nil
	}
	conf, err := krb5Conf(kc)
	if err != nil {
		return err
	}
	creds, warnings, err := krb.FromOptions(kc.ServerEntry.Options, conf, "")
	for _, w := range warnings {
		log.Warn(kc.JAASFile + ": section " + cfg.SASLSection + ": " + w)
	}
	if err != nil {
		return fmt.Errorf("%s: section %s: %w", kc.JAASFile, cfg.SASLSection, err)
	}
	opts.SASL.Kerberos = creds
	opts.SASL.KerberosNames = krb.NameRules{
		DefaultRealm: conf.DefaultRealm(),
		RemoveHost:   kc.RemoveHostFromPrincipal,
		RemoveRealm:  kc.RemoveRealmFromPrincipal,
	}
	log.Info("SASL GSSAPI (Kerberos) authentication enabled", "jaasConfig", kc.JAASFile, "section", cfg.SASLSection,
		"principal", creds.Principal, "krb5.conf", conf.Path, "removeHostFromPrincipal", kc.RemoveHostFromPrincipal,
		"removeRealmFromPrincipal", kc.RemoveRealmFromPrincipal)
	return nil
}

// quorumKerberos loads the Kerberos credentials of the quorum JAAS
// sections (Krb5LoginModule entries) into opts.QuorumAuth.
func quorumKerberos(cfg *config.Config, opts *server.Options, log *slog.Logger) error {
	qa := cfg.QuorumAuth
	if qa.ServerKerberos == nil && qa.LearnerKerberos == nil {
		return nil
	}
	conf, err := krb5Conf(cfg.Kerberos)
	if err != nil {
		return err
	}
	load := func(e *config.JAASEntry, section string) (*krb.Credentials, error) {
		if e == nil {
			return nil, nil
		}
		creds, warnings, err := krb.FromOptions(e.Options, conf, "")
		for _, w := range warnings {
			log.Warn(cfg.JAASConfigFile + ": section " + section + ": " + w)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: section %s: %w", cfg.JAASConfigFile, section, err)
		}
		return creds, nil
	}
	if opts.QuorumAuth.ServerKerberos, err = load(qa.ServerKerberos, qa.ServerSection); err != nil {
		return err
	}
	if opts.QuorumAuth.LearnerKerberos, err = load(qa.LearnerKerberos, qa.LearnerSection); err != nil {
		return err
	}
	opts.QuorumAuth.ServicePrincipal = qa.ServicePrincipal
	log.Info("quorum SASL with Kerberos (GSSAPI)", "servicePrincipal", qa.ServicePrincipal, "krb5.conf", conf.Path)
	return nil
}

// krb5Conf is the Kerberos configuration Java would use.
func krb5Conf(kc config.Kerberos) (*krb.Krb5Conf, error) {
	if kc.Realm != "" || kc.KDC != "" {
		return krb.Krb5ConfFor(kc.Realm, kc.KDC)
	}
	return krb.LoadKrb5Conf(krb.Krb5ConfPath(kc.Krb5Conf))
}
