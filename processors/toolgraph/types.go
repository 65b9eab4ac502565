package toolgraph

import "github.com/chronicle-dev/chronicle/events"

// Derived event types of the tool graph, on events.TopicLearned.
const (
	// EdgeLearned is graph.edge.learned.v1 (data EdgeLearnedData): an edge
	// was observed for the first time, or its confidence crossed the
	// suggestion (0.7) or speculation (0.85) threshold of the GraphRAG
	// design, in either direction.
	EdgeLearned = events.GraphEdgeLearned
	// RanksUpdated is graph.ranks.updated.v1 (data RanksUpdatedData):
	// PageRank and Louvain communities were recomputed.
	RanksUpdated = events.GraphRanksUpdated
)

// GraphID is the value of RanksUpdatedData.Graph and TransitionData.Graph:
// the name of the graph (this processor's projection). With the event's
// scope it is the record key of graph.ranks.updated.v1 and
// tool.transition.observed.v1 (KeyField "graph": EntityKey(scope,
// "toolgraph")), so a scope's transitions and rank snapshots stay in order
// on one partition; graph.edge.learned.v1 is keyed by EntityKey(scope,
// from tool).
const GraphID = Name

// Reasons of an EdgeLearnedData.
const (
	// ReasonFirstObserved: the edge's first observation (observed_count 1).
	ReasonFirstObserved = "first_observed"
	// ReasonAboveSuggestion: confidence rose to ≥ SuggestionThreshold.
	ReasonAboveSuggestion = "above_suggestion"
	// ReasonAboveSpeculation: confidence rose to ≥ SpeculationThreshold.
	ReasonAboveSpeculation = "above_speculation"
	// ReasonBelowSpeculation: confidence fell below SpeculationThreshold
	// (another successor of the same tool was observed).
	ReasonBelowSpeculation = "below_speculation"
	// ReasonBelowSuggestion: confidence fell below SuggestionThreshold.
	ReasonBelowSuggestion = "below_suggestion"
)

// EdgeLearnedData is the data of graph.edge.learned.v1. Confidence and
// Weight are the values right after the causing observation; Threshold is
// the crossed threshold (0.7 or 0.85) and absent for first_observed.
type EdgeLearnedData struct {
	// From is the tool called first; meant as the record key.
	From string `json:"from"`
	// To is the tool called right after From in the same workflow.
	To string `json:"to"`
	// EdgeType is the edge type; learned edges are EdgeSequence.
	EdgeType EdgeType `json:"edge_type"`
	// EdgeSource is how the edge is known; learned edges are SourceObserved.
	EdgeSource EdgeSource `json:"edge_source"`
	// ObservedCount is count(From→To), ≥ 1.
	ObservedCount int `json:"observed_count"`
	// SourceObservations is count(From→·), the transitions out of From, ≥ 1.
	SourceObservations int `json:"source_observations"`
	// Confidence is Confidence(ObservedCount, SourceObservations), in [0, 1).
	Confidence float64 `json:"confidence"`
	// Weight is EdgeWeight(EdgeType, EdgeSource, Confidence), in [0, 1].
	Weight float64 `json:"weight"`
	// Reason is one of the Reason* constants.
	Reason string `json:"reason"`
	// Threshold is the crossed threshold; 0 (absent) for first_observed.
	Threshold float64 `json:"threshold,omitempty"`
}

// RanksUpdatedData is the data of graph.ranks.updated.v1: the result of a
// recompute of PageRank and Louvain communities over the whole graph.
type RanksUpdatedData struct {
	// Graph is GraphID; meant as the record key.
	Graph string `json:"graph"`
	// Transitions is the total number of observed transitions (edge
	// updates) when the recompute ran; a multiple of Processor.RecomputeEvery.
	Transitions int `json:"transitions"`
	// Tools is the number of tools (nodes) in the graph.
	Tools int `json:"tools"`
	// Edges is the number of distinct sequence edges, self-loops included.
	Edges int `json:"edges"`
	// Communities is the number of Louvain communities.
	Communities int `json:"communities"`
	// Ranks are the MaxRanksInEvent tools of highest PageRank, in
	// decreasing PageRank order (ties by tool name).
	Ranks []ToolRank `json:"ranks"`
}

// ToolRank is one tool's rank in a RanksUpdatedData.
type ToolRank struct {
	// Tool is the tool id.
	Tool string `json:"tool"`
	// PageRank is the tool's weighted PageRank; all tools sum to 1.
	PageRank float64 `json:"pagerank"`
	// Community is the tool's Louvain community (0-based; communities are
	// numbered in the order of their alphabetically first tool).
	Community int `json:"community"`
	// InDegree is the number of distinct predecessor tools.
	InDegree int `json:"in_degree"`
	// OutDegree is the number of distinct successor tools.
	OutDegree int `json:"out_degree"`
}

// MaxRanksInEvent bounds RanksUpdatedData.Ranks, so an event stays small on
// graphs of thousands of tools (the full table is Tools(store)).
const MaxRanksInEvent = 100
