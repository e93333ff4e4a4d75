package discovery

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ServiceType is how an instance is registered (Curator's ServiceType).
type ServiceType string

// The service types, as Curator writes them.
const (
	// Dynamic: an ephemeral node, gone with the session (re-created by
	// the registration while it lasts).
	Dynamic ServiceType = "DYNAMIC"
	// Static: a persistent node, deleted by Unregister and Close.
	Static ServiceType = "STATIC"
	// Permanent: a persistent node that Close leaves in place.
	Permanent ServiceType = "PERMANENT"
	// DynamicSequential: an ephemeral-sequential node base/name/<id><seq>.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
)

// Instance is one registered instance of a service: the JSON that
// curator-x-discovery's JsonInstanceSerializer reads and writes, field for
// field and in its order. Port and SSLPort are null when not set.
//
// Payload is the payload's JSON as Jackson writes it. Curator's serializer
// uses Jackson's default typing for non-final payload classes: such a
// payload is an object carrying its Java class in an "@class" member
// (e.g. {"@class":"java.util.HashMap","k":"v"}); a String payload is a
// plain JSON string. Java processes can read a Go-written payload only if
// it follows that form for their payload class.
type Instance struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             string          `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         ServiceType     `json:"serviceType"`
	URISpec             *URISpec        `json:"uriSpec"`
}

// Int returns a pointer to p, for Port and SSLPort.
func Int(p int) *int { return &p }

// Encode returns the instance's JSON.
func (in *Instance) Encode() ([]byte, error) {
	c := *in
	if len(c.Payload) == 0 {
		c.Payload = nil // written as null
	}
	return json.Marshal(&c)
}

// Decode parses an instance's JSON. Members it does not know (such as
// "enabled", written by some Curator versions) are ignored.
func Decode(data []byte) (*Instance, error) {
	var in Instance
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("discovery: bad instance: %w", err)
	}
	if string(in.Payload) == "null" {
		in.Payload = nil
	}
	if in.ServiceType == "" {
		in.ServiceType = Dynamic
	}
	return &in, nil
}

// URISpec is Curator's UriSpec: a template such as
// "{scheme}://{address}:{port}/api" whose {variables} Build fills in. Its
// JSON is {"parts":[{"value":...,"variable":bool},...]}.
type URISpec struct {
	Parts []URIPart `json:"parts"`
}

// URIPart is a literal text or a variable name.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// ParseURISpec splits a template into literal parts and {variable} parts.
func ParseURISpec(template string) *URISpec {
	s := &URISpec{}
	for template != "" {
		i := strings.IndexByte(template, '{')
		if i < 0 {
			s.Parts = append(s.Parts, URIPart{Value: template})
			break
		}
		j := strings.IndexByte(template[i:], '}')
		if j < 0 {
			s.Parts = append(s.Parts, URIPart{Value: template})
			break
		}
		if i > 0 {
			s.Parts = append(s.Parts, URIPart{Value: template[:i]})
		}
		s.Parts = append(s.Parts, URIPart{Value: template[i+1 : i+j], Variable: true})
		template = template[i+j+1:]
	}
	return s
}

// Build fills in the template for in. The variables are Curator's: scheme
// ("https" if in has an SSL port, else "http"), name, id, address, port,
// ssl-port, registration-time-utc, service-type, open-brace ("{") and
// close-brace ("}"); vars adds or overrides some. An unknown variable is
// left as "{name}".
func (s *URISpec) Build(in *Instance, vars map[string]string) string {
	v := map[string]string{
		"name": in.Name, "id": in.ID, "address": in.Address,
		"registration-time-utc": strconv.FormatInt(in.RegistrationTimeUTC, 10),
		"service-type":          string(in.ServiceType),
		"open-brace":            "{", "close-brace": "}",
		"scheme": "http",
	}
	if in.Port != nil {
		v["port"] = strconv.Itoa(*in.Port)
	}
	if in.SSLPort != nil {
		v["ssl-port"] = strconv.Itoa(*in.SSLPort)
		v["scheme"] = "https"
	}
	for k, x := range vars {
		v[k] = x
	}
	var b strings.Builder
	for _, p := range s.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
		} else if x, ok := v[p.Value]; ok {
			b.WriteString(x)
		} else {
			b.WriteString("{" + p.Value + "}")
		}
	}
	return b.String()
}
