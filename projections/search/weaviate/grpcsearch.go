package weaviate

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// docProps are the separate properties of a Doc (besides the
// collection's id property), read for objects without docProp.
var docProps = []string{"scope", "title", "description", "content", "outcome", "tags", "source_sessions",
	"confidence", "pruned", "evidence", "usage_count", "model", "dim"}

// grpcSearcher runs candidate queries over Weaviate's gRPC Search API
// (weaviate.v1.Weaviate/Search): properties come back as protocol
// buffers, without GraphQL's per-field resolution and JSON encoding.
type grpcSearcher struct {
	conn   *grpc.ClientConn
	client pb.WeaviateClient
	md     metadata.MD // authorization header, when an API key is set
}

// newGRPCSearcher connects (lazily: no I/O here) to the gRPC API at
// cfg.GRPCHost.
func newGRPCSearcher(cfg Config) (*grpcSearcher, error) {
	creds := insecure.NewCredentials()
	if cfg.Scheme == "https" {
		creds = credentials.NewClientTLSFromCert(nil, "")
	}
	conn, err := grpc.NewClient(cfg.GRPCHost, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("weaviate: gRPC client for %s: %w", cfg.GRPCHost, err)
	}
	return &grpcSearcher{conn: conn, client: pb.NewWeaviateClient(conn), md: metadata.New(cfg.authHeaders())}, nil
}

func pbText(path, value string, op pb.Filters_Operator) *pb.Filters {
	return &pb.Filters{Operator: op, Target: &pb.FilterTarget{Target: &pb.FilterTarget_Property{Property: path}},
		TestValue: &pb.Filters_ValueText{ValueText: value}}
}

func pbTexts(path string, values []string) *pb.Filters {
	return &pb.Filters{Operator: pb.Filters_OPERATOR_CONTAINS_ANY, Target: &pb.FilterTarget{Target: &pb.FilterTarget_Property{Property: path}},
		TestValue: &pb.Filters_ValueTextArray{ValueTextArray: &pb.TextArray{Values: values}}}
}

// opNot is the gRPC API's OPERATOR_NOT (15), added to the protocol after
// the v1.27 stubs this module builds with; the server (weaviatetest.Version,
// 1.35) has it.
const opNot pb.Filters_Operator = 15

func pbNot(f *pb.Filters) *pb.Filters {
	return &pb.Filters{Operator: opNot, Filters: []*pb.Filters{f}}
}

// grpcWhere is where for the gRPC API: the same clauses, and every value
// is sent as is (no GraphQL quoting), so it is always exact given the
// known scopes.
func grpcWhere(f search.Filter, refused []string) *pb.Filters {
	ops := []*pb.Filters{
		{Operator: pb.Filters_OPERATOR_EQUAL, Target: &pb.FilterTarget{Target: &pb.FilterTarget_Property{Property: "pruned"}},
			TestValue: &pb.Filters_ValueBoolean{ValueBoolean: false}},
		{Operator: pb.Filters_OPERATOR_GREATER_THAN_EQUAL, Target: &pb.FilterTarget{Target: &pb.FilterTarget_Property{Property: "confidence"}},
			TestValue: &pb.Filters_ValueNumber{ValueNumber: f.MinConfidence}},
	}
	if f.Outcome != "" && f.Outcome != "all" {
		ops = append(ops, pbText("outcome", f.Outcome, pb.Filters_OPERATOR_EQUAL))
	}
	if f.ScopeKind != "" && f.ScopeKind != search.ScopeAll {
		ops = append(ops, pbText("scope_kind", f.ScopeKind, pb.Filters_OPERATOR_EQUAL))
	}
	if f.Readable != nil && len(refused) > 0 {
		ops = append(ops, pbNot(pbTexts("scope", refused)))
	}
	if f.ExcludeSourceSession != "" {
		ops = append(ops, pbNot(pbTexts("source_sessions", []string{f.ExcludeSourceSession})))
	}
	return &pb.Filters{Operator: pb.Filters_OPERATOR_AND, Filters: ops}
}

// vectorBytes is v as the gRPC API's vector_bytes: little-endian float32s.
func vectorBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// search is one gRPC pass over class (in tenant, when set: a scoped
// class): nearVector when vec is set, bm25 on text over textProps when
// text is set, else the objects w admits; limited to limit, asking for
// props (none: no property at all), with uuid for the object UUIDs, and
// for the distance or the score (never the vector).
func (g *grpcSearcher) search(ctx context.Context, class, tenant, idProp string, vec []float32, text string, w *pb.Filters, limit int, props []string, uuid bool) ([]hit, error) {
	req := &pb.SearchRequest{Collection: class, Tenant: tenant, Limit: uint32(limit), Filters: w, Uses_123Api: true, Uses_125Api: true, Uses_127Api: true,
		Properties: &pb.PropertiesRequest{NonRefProperties: props},
		Metadata:   &pb.MetadataRequest{Uuid: uuid, Distance: vec != nil, Score: vec == nil && text != ""}}
	switch {
	case vec != nil:
		req.NearVector = &pb.NearVector{VectorBytes: vectorBytes(vec)}
	case text != "":
		req.Bm25Search = &pb.BM25{Query: text, Properties: textProps}
	}
	if len(g.md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, g.md)
	}
	reply, err := g.client.Search(ctx, req)
	if err != nil {
		return nil, err
	}
	hits := make([]hit, len(reply.Results))
	for i, r := range reply.Results {
		h := &hits[i]
		fields := r.GetProperties().GetNonRefProps().GetFields()
		switch id := fields[idProp].GetTextValue(); idProp {
		case "pattern_id":
			h.PatternID = id
		case "tool_id":
			h.ToolID = id
		default:
			h.MemoryID = id
		}
		h.Doc = fields[docProp].GetTextValue()
		h.Scope = fields["scope"].GetTextValue()
		md := r.GetMetadata()
		h.UUID = md.GetId()
		if vec != nil && md.GetDistancePresent() {
			d := float64(md.GetDistance())
			h.Additional.Distance = &d
		}
		if vec == nil && md.GetScorePresent() {
			s := jsonFloat(md.GetScore())
			h.Additional.Score = &s
		}
	}
	return hits, nil
}
