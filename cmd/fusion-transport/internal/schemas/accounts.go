package schemas

import (
	"context"

	graphql "github.com/graph-gophers/graphql-go"
)

// accountsSubgraphSDL is what accounts answers to _service { sdl }.
const accountsSubgraphSDL = `type Query {
  users: [User]
  me: User
  user(id: ID!): User
}

type User @key(fields: "id") {
  id: ID!
  name: String
  username: String
  birthday: Int
}
`

// accountsSchema is the executable schema of accounts.
const accountsSchema = `
schema { query: Query }
type Query {
  users: [User]
  me: User
  user(id: ID!): User
  _service: _Service!
  _entities(representations: [_Any!]!): [_Entity]!
}
type User @key(fields: "id") {
  id: ID!
  name: String
  username: String
  birthday: Int
}
union _Entity = User
` + federationSDL

type accountsQuery struct{}

func (accountsQuery) Users() *[]*accountsUser {
	out := make([]*accountsUser, len(users))
	for i := range users {
		out[i] = &accountsUser{&users[i]}
	}
	return &out
}

// Me resolves the user named by the bearer token of the request.
func (accountsQuery) Me(ctx context.Context) *accountsUser {
	return accountsUserByID(bearerToken(ctx))
}

func (accountsQuery) User(args struct{ ID graphql.ID }) *accountsUser {
	return accountsUserByID(string(args.ID))
}

func (accountsQuery) Service() service { return service{accountsSubgraphSDL} }

func (accountsQuery) Entities(args entitiesArgs) []*accountsEntity {
	out := make([]*accountsEntity, len(args.Representations))
	for i, rep := range args.Representations {
		if rep.typename() != "User" {
			continue
		}
		if id, ok := rep.key("id"); ok {
			if u := accountsUserByID(id); u != nil {
				out[i] = &accountsEntity{u}
			}
		}
	}
	return out
}

func accountsUserByID(id string) *accountsUser {
	if u := findUser(id); u != nil {
		return &accountsUser{u}
	}
	return nil
}

type accountsEntity struct{ user *accountsUser }

func (e *accountsEntity) ToUser() (*accountsUser, bool) { return e.user, e.user != nil }

type accountsUser struct{ u *userRecord }

func (u *accountsUser) ID() graphql.ID    { return graphql.ID(u.u.id) }
func (u *accountsUser) Name() *string     { return &u.u.name }
func (u *accountsUser) Username() *string { return &u.u.username }
func (u *accountsUser) Birthday() *int32  { return &u.u.birthday }
