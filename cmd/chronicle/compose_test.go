package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of compose.yaml the test reads (anchors and
// merge keys are resolved by the YAML decoder).
type composeFile struct {
	Services map[string]struct {
		Image       string         `yaml:"image"`
		Hostname    string         `yaml:"hostname"`
		Command     []string       `yaml:"command"`
		Environment map[string]any `yaml:"environment"`
		Volumes     []string       `yaml:"volumes"`
		DependsOn   map[string]any `yaml:"depends_on"`
		Ports       []string       `yaml:"ports"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// TestComposeFile checks compose.yaml, which cannot run here (no container
// engine): a 3-node KRaft Kafka (combined broker+controller, one cluster
// id, every node a voter, replication factor 3, min.insync.replicas 2,
// auto topic creation off), Weaviate, and 3 Chronicle replicas whose
// commands parse as `chronicle serve` flags, name every Kafka node, use
// the same --partitions, advertise their own service name, and keep their
// projections in their own volume; every volume and dependency named is
// defined, and no host port is published twice.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	env := func(svc, k string) string { return fmt.Sprint(cf.Services[svc].Environment[k]) }

	var kafkas []string
	for name, s := range cf.Services {
		if strings.HasPrefix(s.Image, "apache/kafka:") {
			kafkas = append(kafkas, name)
		}
	}
	slices.Sort(kafkas)
	if len(kafkas) != 3 {
		t.Fatalf("Kafka nodes %v, want 3", kafkas)
	}
	ids := map[string]bool{}
	for _, k := range kafkas {
		for key, want := range map[string]string{
			"KAFKA_PROCESS_ROLES": "broker,controller", "KAFKA_DEFAULT_REPLICATION_FACTOR": "3", "KAFKA_MIN_INSYNC_REPLICAS": "2",
			"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "3", "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false", "CLUSTER_ID": env(kafkas[0], "CLUSTER_ID"),
		} {
			if got := env(k, key); got != want {
				t.Errorf("%s: %s=%s, want %s", k, key, got, want)
			}
		}
		id := env(k, "KAFKA_NODE_ID")
		if ids[id] {
			t.Errorf("%s: KAFKA_NODE_ID %s twice", k, id)
		}
		ids[id] = true
		voter := id + "@" + k + ":9093"
		if !slices.Contains(strings.Split(env(k, "KAFKA_CONTROLLER_QUORUM_VOTERS"), ","), voter) {
			t.Errorf("%s: voters %s lack %s", k, env(k, "KAFKA_CONTROLLER_QUORUM_VOTERS"), voter)
		}
		if !strings.Contains(env(k, "KAFKA_ADVERTISED_LISTENERS"), "PLAINTEXT://"+k+":9092") {
			t.Errorf("%s: advertised listeners %s", k, env(k, "KAFKA_ADVERTISED_LISTENERS"))
		}
	}
	if !strings.HasPrefix(cf.Services["weaviate"].Image, "cr.weaviate.io/semitechnologies/weaviate:") {
		t.Errorf("weaviate image %q", cf.Services["weaviate"].Image)
	}

	var replicas []string
	partitions := map[string]bool{}
	dataVolumes := map[string]string{}
	hostPorts := map[string]string{}
	for name, s := range cf.Services {
		for dep := range s.DependsOn {
			if _, ok := cf.Services[dep]; !ok {
				t.Errorf("%s depends on undefined service %s", name, dep)
			}
		}
		for _, v := range s.Volumes {
			src := strings.SplitN(v, ":", 2)[0]
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := cf.Volumes[src]; !ok {
					t.Errorf("%s uses undefined volume %s", name, src)
				}
			}
			if strings.HasSuffix(v, ":/data") {
				if other, dup := dataVolumes[src]; dup {
					t.Errorf("%s and %s share the data volume %s", name, other, src)
				}
				dataVolumes[src] = name
			}
		}
		for _, p := range s.Ports {
			host := strings.SplitN(p, ":", 2)[0]
			if other, dup := hostPorts[host]; dup {
				t.Errorf("host port %s published by %s and %s", host, name, other)
			}
			hostPorts[host] = name
		}
		i := slices.Index(s.Command, "serve")
		if i < 0 {
			continue
		}
		replicas = append(replicas, name)
		cmd := serveCmd()
		if err := cmd.ParseFlags(s.Command[i+1:]); err != nil {
			t.Errorf("%s: chronicle serve %v: %v", name, s.Command[i+1:], err)
			continue
		}
		if n := cmd.Flags().NArg(); n != 0 {
			t.Errorf("%s: %d stray arguments %v", name, n, cmd.Flags().Args())
		}
		flag := func(f string) string { return cmd.Flags().Lookup(f).Value.String() }
		brokers := strings.Split(flag("brokers"), ",")
		for _, k := range kafkas {
			if !slices.Contains(brokers, k+":9092") {
				t.Errorf("%s: --brokers %v lacks %s:9092", name, brokers, k)
			}
		}
		partitions[flag("partitions")] = true
		if want := "http://" + s.Hostname + ":8080"; s.Hostname != name || flag("advertise") != want {
			t.Errorf("%s: hostname %s, --advertise %s, want %s", name, s.Hostname, flag("advertise"), "http://"+name+":8080")
		}
		if err := checkAdvertise(flag("advertise")); err != nil {
			t.Error(err)
		}
		if flag("data") != "/data" || flag("tokens") == "" || flag("http") != "0.0.0.0:8080" {
			t.Errorf("%s: --data %s --tokens %q --http %s", name, flag("data"), flag("tokens"), flag("http"))
		}
		if flag("weaviate-grpc") != "weaviate:50051" {
			t.Errorf("%s: --weaviate-grpc %s", name, flag("weaviate-grpc"))
		}
		if flag("weaviate") != "weaviate:8080" {
			t.Errorf("%s: --weaviate %s", name, flag("weaviate"))
		}
	}
	slices.Sort(replicas)
	if fmt.Sprint(replicas) != "[chronicle-1 chronicle-2 chronicle-3]" {
		t.Errorf("replicas %v", replicas)
	}
	if len(partitions) != 1 || !partitions["12"] {
		t.Errorf("--partitions of the replicas: %v, want 12 on every one", partitions)
	}
	if len(dataVolumes) != 3 {
		t.Errorf("data volumes %v, want one per replica", dataVolumes)
	}
}
